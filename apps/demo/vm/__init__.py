"""An OpenZFS test host in a QEMU guest, built from Debian's packages (see image.py,
build-image.sh and machine.py)."""
