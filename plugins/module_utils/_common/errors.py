# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's error hierarchy: every error is a ValueError whose message names the field.

Callers that only need "bad input" catch ``ValueError`` (or :class:`GpushareError`); the
subclasses say which step refused it.
"""

from __future__ import annotations

from typing import Sequence


class GpushareError(ValueError):
    """Bad input to one of the collection's pure functions; the message names the field."""


class PlanError(GpushareError):
    """Every problem that keeps the plan from being made from the inventory, in one message."""

    def __init__(self, errors: Sequence[str]):
        self.errors = list(errors)
        super().__init__("the plan cannot be made, %d problem(s):\n- %s" % (len(self.errors), "\n- ".join(self.errors)))


class PlanContractError(GpushareError):
    """A plan handed to a consumer (values, examples, report, usage) lacks what the contract promises."""
