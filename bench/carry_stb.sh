#!/bin/sh
# Copy the stb headers the demos and tests include (<stb/...>) from this machine's libstb-dev into
# build/stb/stb/, for a machine without libstb-dev (the GPU machines): take build/stb along and
# build there with the copy:
#
#   sh bench/carry_stb.sh                         # here, where /usr/include/stb exists
#   make -j"$(nproc)" STB_INCLUDE=build/stb demos # there
#
# Usage: bench/carry_stb.sh [SRC_DIR [DEST_DIR]]   (defaults: /usr/include/stb build/stb)
set -eu
cd "$(dirname "$0")/.."
src=${1:-/usr/include/stb}
dest=${2:-build/stb}
mkdir -p "$dest/stb"
# stb_image.h only for tests/check_outputs.c (make test); the demos need the other two
for h in stb_image_write.h stb_truetype.h stb_image.h; do
    if [ ! -f "$src/$h" ]; then
        echo "carry_stb.sh: $src/$h not found (install libstb-dev, or pass the folder that holds it)" >&2
        exit 1
    fi
    cp "$src/$h" "$dest/stb/$h"
done
echo "carry_stb.sh: copied to $dest/stb/; build with: make STB_INCLUDE=$dest demos"
