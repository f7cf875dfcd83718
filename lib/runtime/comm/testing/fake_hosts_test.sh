#!/usr/bin/env bash
# mpirun_test.sh on fake hosts: hosts of 2 ranks (3, 4 and 5 ranks), then of 3 (5 and 6);
# ends with the runs' total "P passed, F failed".
#   fake_hosts_test.sh MPIRUN_TEST_SH BINARY
set -u
mpirun_test=$1
binary=$2
passed=0
failed=0
for spec in "2 3 4 5" "3 5 6"; do
  read -r per_host counts <<<"$spec"
  echo "== hosts of $per_host ranks (PARALLAX_TEST_RANKS_PER_HOST=$per_host)"
  # shellcheck disable=SC2086  # counts is a list of rank counts
  output=$(PARALLAX_TEST_RANKS_PER_HOST=$per_host "$mpirun_test" "$binary" $counts)
  echo "$output"
  line=$(grep -E "^[0-9]+ passed, [0-9]+ failed$" <<<"$output" | tail -n 1)
  if [[ -z "$line" ]]; then
    failed=$((failed + 1))
    continue
  fi
  passed=$((passed + ${line%% *}))
  failed=$((failed + $(sed -E 's/.* ([0-9]+) failed$/\1/' <<<"$line")))
done
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
