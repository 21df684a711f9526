"""Offline stand-in for the get-pip bootstrap script ansible-test downloads.

ansible-test bootstraps pip in each sanity virtual environment by running a get-pip
script it fetches from a host that cannot be reached from every network. It accepts a
script already placed in its cache instead; tools/sanity.sh installs this file there.
It gives the interpreter pip through its own ``ensurepip`` and then lets that pip install
exactly what ansible-test asked for (the pinned pip, setuptools/wheel options).
"""

import os
import subprocess
import sys

CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"


def main():
    subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade", "--default-pip"])
    args = [arg for arg in sys.argv[1:] if arg not in ("--no-setuptools", "--no-wheel")]
    command = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check"]
    if os.path.exists(CA_BUNDLE):
        command += ["--cert", CA_BUNDLE]
    subprocess.check_call(command + args)


if __name__ == "__main__":
    main()
