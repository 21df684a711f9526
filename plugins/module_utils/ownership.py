# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which cluster objects the collection owns, and which plan wrote them.

Every object the collection renders from a plan carries ``MANAGED_BY_LABEL: MANAGED_BY``
(the recommended label of https://kubernetes.io/docs/concepts/overview/working-with-objects/common-labels/)
and ``GENERATION_LABEL``: a short hash of the plan that wrote it. Pruning deletes only objects
with the first label, so an object someone else created is never touched; comparing two plans
ignores the second, which changes whenever anything in the plan does.
"""

from __future__ import annotations

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "gpushare.cluster"
GENERATION_LABEL = "gpushare.io/plan-generation"
