"""A mistake the user can fix: raised anywhere, answered by the command with one message and exit 2."""


class UserError(Exception):
    """A mistake the user can fix; its message says how. Exit 2, no traceback."""
