"""The failures a command can end with, each tied to one exit code of the contract."""


class TaskError(Exception):
    """Base of every failure the user can cause or meet; carries its exit code."""

    code = "internal"
    exit_code = 1

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class UsageError(TaskError):
    code, exit_code = "usage", 2


class NotFound(TaskError):
    code, exit_code = "not_found", 3


class Refused(TaskError):
    code, exit_code = "refused", 4


class Busy(TaskError):
    code, exit_code = "busy", 5


class Corrupt(TaskError):
    code, exit_code = "corrupt", 6

    def __init__(self, message: str, file: str = "", rule: str = "json"):
        super().__init__(message)
        self.file = file
        self.rule = rule
