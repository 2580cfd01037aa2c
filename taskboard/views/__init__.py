"""What people read: the view model (viewmodel), plain text (plain), rich views (render), messages, and user text made safe (text). Imports disk and core only."""
