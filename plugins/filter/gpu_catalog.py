# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters exposing the GPU catalog to playbooks and templates (plugins/module_utils/gpu/catalog.py);
documented in gpu_model.yml, gpu_model_key.yml and mig_profile.yml.

- ``'0x2330' | gpushare.cluster.gpu_model`` -> the catalog entry as a dict (key,
  product_names, device_ids, memory_mib, architecture, mig_capable, placement_units,
  unconfirmed, profiles: [{name, id, memory_mib, compute_slices, memory_slices, max_count,
  starts, size, media, unconfirmed}]).
- ``'NVIDIA H100 80GB HBM3' | gpushare.cluster.gpu_model_key`` -> ``'H100-80GB'``.
- ``'H100-80GB' | gpushare.cluster.mig_profile('3g.40gb')`` -> one profile dict.
"""

from __future__ import annotations

from dataclasses import asdict

from ansible.errors import AnsibleFilterError

from ansible_collections.gpushare.cluster.plugins.module_utils.gpu import catalog as gpu_catalog


def _profile_dict(profile):
    data = asdict(profile)
    data["starts"] = list(profile.starts)
    data["unconfirmed_fields"] = list(profile.unconfirmed_fields)
    data["media"] = profile.media
    return data


def _lookup(value):
    if not isinstance(value, str):
        raise AnsibleFilterError("GPU model must be a string (catalog key, product name or PCI device ID), got %r"
                                 % (value,))
    try:
        return gpu_catalog.lookup(value)
    except ValueError as error:
        raise AnsibleFilterError(str(error)) from error


def gpu_model(value):
    """The catalog entry for a key, product name or PCI device ID, as a dict."""
    model = _lookup(value)
    return {
        "key": model.key,
        "product_names": list(model.product_names),
        "device_ids": list(model.device_ids),
        "memory_mib": model.memory_mib,
        "architecture": model.architecture,
        "mig_capable": model.mig_capable,
        "placement_units": model.placement_units,
        "compute_slices": model.compute_slices,
        "memory_slices": model.memory_slices,
        "unconfirmed": model.unconfirmed,
        "unconfirmed_fields": list(model.unconfirmed_fields),
        "profiles": [_profile_dict(p) for p in model.profiles],
    }


def gpu_model_key(value):
    """The catalog key for a key, product name or PCI device ID."""
    return _lookup(value).key


def mig_profile(value, name):
    """One MIG profile of a model, as a dict."""
    model = _lookup(value)
    try:
        return _profile_dict(model.profile(str(name)))
    except ValueError as error:
        raise AnsibleFilterError(str(error)) from error


class FilterModule:
    """GPU catalog filters."""

    def filters(self):
        return {
            "gpu_model": gpu_model,
            "gpu_model_key": gpu_model_key,
            "mig_profile": mig_profile,
        }
