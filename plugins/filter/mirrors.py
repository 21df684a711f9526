# -*- coding: utf-8 -*-
# Copyright: gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that point every download at the mirrors of ``gpushare_mirrors`` (plugins/module_utils/sources/mirrors.py);
documented in one <name>.yml per filter.

Examples (roles pass the inventory settings explicitly):
  "{{ 'nvcr.io/nvidia/driver:595.91.07-ubuntu24.04' | gpushare.cluster.mirror_image(gpushare_mirrors) }}"
  "{{ 'nvcr.io/nvidia' | gpushare.cluster.mirror_image_repo(gpushare_mirrors) }}"
  "{{ 'https://pkgs.k8s.io/core:/stable:/v1.35/deb/' | gpushare.cluster.mirror_url('apt', 'kubernetes', gpushare_mirrors) }}"
  "{{ gpushare_proxy | gpushare.cluster.mirror_proxy_env(['10.96.0.0/12']) }}"
"""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils.sources import mirrors
from ansible_collections.gpushare.cluster.plugins.plugin_utils.filters import filter_from as _wrap


def mirror_url(upstream, manager, name, mirror_settings=None):
    """Package repository base URL: ``upstream | mirror_url('apt', 'kubernetes', gpushare_mirrors)``."""
    return mirrors.repository_url(manager, name, upstream, mirror_settings)


def mirror_chart(name, version, upstream, mirror_settings=None):
    """kubernetes.core.helm arguments: ``'kueue' | mirror_chart('0.19.2', 'oci://...', gpushare_mirrors)``."""
    return mirrors.chart_location(name, version, upstream, mirror_settings)


def mirror_validate(mirror_settings, proxy=None):
    """Normalized ``{"mirrors", "proxy"}``; fails listing every wrong field."""
    return mirrors.validate(mirror_settings, proxy)


class FilterModule:
    """gpushare.cluster mirror filters."""

    def filters(self):
        return {
            "mirror_image": _wrap(mirrors.mirror_image),
            "mirror_image_repo": _wrap(mirrors.mirror_repository),
            "mirror_url": _wrap(mirror_url),
            "mirror_chart": _wrap(mirror_chart),
            "mirror_file_url": _wrap(mirrors.file_url),
            "mirror_proxy_env": _wrap(mirrors.proxy_env),
            "mirror_hosts_toml": _wrap(mirrors.containerd_hosts_toml),
            "mirror_validate": _wrap(mirror_validate),
        }
