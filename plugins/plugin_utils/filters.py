# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every filter plugin of the collection does around the pure code it exposes."""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError


def plain(value):
    """Plain Python types: Ansible tags template results with str/dict subclasses, which
    the pure code's yaml.SafeDumper and equality checks must not see."""
    if isinstance(value, Mapping):
        return {plain(key): plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, bool) or value is None:
        return value
    for kind in (str, int, float):
        if isinstance(value, kind):
            return kind(value)
    return value


def filter_from(function):
    """A filter calling ``function`` on plain arguments; its ValueError (the pure code's
    way of naming bad input) becomes an AnsibleFilterError with the same message."""
    def wrapper(*args, **kwargs):
        try:
            return function(*[plain(arg) for arg in args], **{key: plain(item) for key, item in kwargs.items()})
        except ValueError as error:
            raise AnsibleFilterError(str(error)) from error
    wrapper.__name__ = function.__name__
    wrapper.__doc__ = function.__doc__
    # inspect.signature follows __wrapped__, so the documentation test can hold each filter's
    # documented options against the function's parameters.
    wrapper.__wrapped__ = function
    return wrapper
