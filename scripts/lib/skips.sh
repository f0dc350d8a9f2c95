# Sourced by the layout scripts: the end-to-end tests that need what a
# layout lacks, by name, for `cargo test -- --skip` (each script says why
# it leaves them out).

# Tests that fault a service's own SQLite file (full disk, immutable,
# not a database): meaningless where the services share one file or use
# a server.
SQLITE_FILE_FAULT_TESTS=(
  a_database_that_cannot_be_reached_or_read_is_a_retryable_503_and_service_resumes_when_it_is_back
  a_write_on_a_full_disk_is_a_retryable_503_and_writes_once_when_room_is_made
  a_write_to_a_read_only_database_is_a_retryable_503_and_writes_once_when_it_is_writable_again
)
# A test that holds a SQLite file's write lock with rusqlite.
SQLITE_LOCK_TEST=a_statement_behind_a_held_lock_gives_up_at_the_services_work_deadline
# A test that brings its own runtime configuration, a libSQL label each.
LIBSQL_CONFIG_TEST=spin_up_accepts_the_libsql_runtime_configuration_and_degrades_cleanly

# Prints one `left out:` line per test and appends `--skip NAME` to the
# array named by the first argument: skip_tests ARRAY REASON NAME...
skip_tests() {
  local -n into="$1"
  local reason="$2"
  shift 2
  for test in "$@"; do
    echo "left out: $test ($reason)"
    into+=(--skip "$test")
  done
}
