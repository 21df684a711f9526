# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which layer plays a run's ``--tags`` ask for.

The host roles tag their fact-reading tasks ``always`` so that ``--tags <role>_<part>``
still has the facts it needs. Ansible runs ``always`` tasks whatever ``--tags`` names
(ansible-core 2.19, lib/ansible/playbook/taggable.py, ``Taggable.evaluate_tags``), so a
run asking for another layer (``--tags gpu_stack,queues``) would still reach every node
with become. A layer play instead asks this module whether the run wants it at all and
targets no host when it does not.
"""

from __future__ import annotations

from typing import Iterable

# Special tags that select every tagged task (``all`` is the default of ``--tags``).
SELECT_EVERYTHING = frozenset({"all", "tagged"})


def layer_selected(run_tags: Iterable[str], layer_tags: Iterable[str]) -> bool:
    """True when ``run_tags`` (``ansible_run_tags``) select any task of a layer.

    ``layer_tags`` are the layer play's own tag and the names of its roles; a role's tasks
    are tagged with the role's name or ``<role>_<part>`` (``host_prep_kernel``), so a run
    tag equal to one of them or starting with ``<tag>_`` selects the layer.
    """
    if isinstance(run_tags, str) or isinstance(layer_tags, str):
        raise ValueError("layer_selected: run_tags and layer_tags must be lists of tag names")
    wanted = {str(tag) for tag in run_tags}
    if not wanted or wanted & SELECT_EVERYTHING:
        return True
    layer = [str(tag) for tag in layer_tags]
    if not layer:
        raise ValueError("layer_selected: layer_tags is empty")
    return any(tag == own or tag.startswith(own + "_") for tag in wanted for own in layer)
