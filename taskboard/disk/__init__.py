"""The board on disk: task files (store), the cache beside them (index), the journal, the runtime state, watching for changes."""
