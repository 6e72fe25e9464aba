#!/usr/bin/env bash
# The guide's embedded programs must be the files the tests build and run: every
# "<!-- file: PATH -->" marker is followed by a code block identical to PATH.
set -euo pipefail
root=$1 doc=$1/docs/programming-guide.md
count=0
while IFS= read -r path; do
  block=$(awk -v p="<!-- file: $path -->" '$0 == p {on = 1; next} on && /^```c\+\+$/ {inb = 1; next} inb && /^```$/ {exit} inb {print}' "$doc")
  if ! diff <(printf '%s\n' "$block") "$root/$path" >/dev/null; then
    echo "docs/programming-guide.md: the code shown for $path differs from the file"
    exit 1
  fi
  count=$((count + 1))
done < <(sed -n 's/^<!-- file: \(.*\) -->$/\1/p' "$doc")
[ "$count" -gt 0 ] || { echo "no embedded files found"; exit 1; }
echo "$count embedded programs match their files"
