#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# The work is done on the controller by the action plugin of the same name.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: render_files
short_description: Write a role's rendered files on the controller in one task
version_added: 0.1.0
description:
  - Writes every entry of O(files) under O(dest) on the controller, from a role template or
    from given content. It is the writer of the C(render) entry points of the roles
    C(gpushare.cluster.kubeadm) and C(gpushare.cluster.microk8s), which show the files the
    role would put on each host without touching a host.
  - Templates are rendered as M(ansible.builtin.template) renders them, through the
    P(ansible.builtin.template#lookup) lookup, with the same search path (the role's
    C(templates) directory first) and the same variables, C(ansible_managed) included.
  - Only files whose content differs are written, each through a rename (mode C(0644), missing
    directories C(0755)); a second run changes nothing. Nothing runs on a host and no module
    is started, so a plan of many hosts renders in seconds.
  - Supports check mode and diff mode.
author:
  - gpushare.cluster maintainers (@gpushare)
options:
  dest:
    description:
      - Directory on the controller the files are written under.
    type: path
    required: true
  files:
    description:
      - The files to write, each with exactly one of O(files[].content) and O(files[].template).
    type: list
    elements: dict
    required: true
    suboptions:
      path:
        description:
          - The file's path relative to O(dest); it may name subdirectories, and may not leave
            O(dest) (no absolute path, no C(..)). Each path once.
        type: str
        required: true
      content:
        description:
          - The file's text, written as given.
        type: str
      template:
        description:
          - A template name, looked up like the O(ansible.builtin.template#module:src) of a
            role's template task.
        type: str
      when:
        description:
          - V(false) leaves the entry out; its template is not rendered. For lists built in
            variables, where some files exist only on some hosts.
        type: bool
        default: true
requirements:
  - Runs on the controller only; it never connects to a host.
"""

EXAMPLES = r"""
- name: Render the node files of this host
  gpushare.cluster.render_files:
    dest: "{{ gpushare_render_dir }}/kubeadm/{{ inventory_hostname }}"
    files:
      - {path: kubelet.env, template: kubelet.env.j2}
      - {path: init.yaml, template: kubeadm-init.yaml.j2, when: "{{ inventory_hostname == groups['control_plane'][0] }}"}
      - path: plan.yaml
        content: "{{ {'channel': microk8s_channel} | to_nice_yaml }}"
  delegate_to: localhost
"""

RETURN = r"""
dest:
  description: The directory written under.
  returned: always
  type: str
  sample: /home/me/cluster/rendered/kubeadm/cp1
files:
  description: Every file written or left as it was, relative to O(dest), in the order given (entries with O(files[].when=false) left out).
  returned: always
  type: list
  elements: str
  sample: [kubelet.env, init.yaml]
changed_files:
  description: The files whose content changed (or would change in check mode).
  returned: always
  type: list
  elements: str
  sample: [init.yaml]
"""
