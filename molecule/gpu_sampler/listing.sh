#!/bin/sh
# Every path of the host's persistent trees with its type, mode, owner and size (target of a
# link): prepare keeps it before the sampler is installed, tests/absent compares after the
# removal. Logs, caches and systemd's own state change on their own and are left out.
find /etc /usr /var /opt /srv /home /root -xdev \
  \( -path /var/log -o -path /var/cache -o -path /var/tmp -o -path /var/lib/systemd -o -path /root/.ansible \) -prune \
  -o -type d -printf '%p %M %u:%g\n' \
  -o -printf '%p %M %u:%g %s %l\n' | LC_ALL=C sort
