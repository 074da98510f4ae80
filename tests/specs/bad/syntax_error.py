"""A spec error: invalid Python."""

from ownership import Spec


class Broken(Spec)
    pass
