"""`ucharmrun` from the installed package: the launcher built with it (ucharm/bin)."""
import os
import sys


def main():
    exe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "ucharmrun")
    if not os.path.exists(exe):
        sys.exit(f"ucharmrun: {exe} is missing (a build of the package without its launcher)")
    os.execv(exe, [exe] + sys.argv[1:])


if __name__ == "__main__":
    main()
