"""A spec error: the class body raises."""

from ownership import Spec


class Raises(Spec):
    value = 1 // 0
