"""A failed command's message starts with its cause, read from PostgreSQL's own words."""

import pytest

from apps.remote.errors import CommandFailed
from apps.remote.shell import Result

# Captured from psql 15 against a real server (stdin, a missing socket, an unknown role).
BAD_VALUE = 'ERROR:  invalid value for parameter "work_mem": "lots"\n'
BAD_VALUE_FROM_STDIN = 'psql:<stdin>:1: ERROR:  invalid value for parameter "work_mem": "lots"\n'
NO_SOCKET = ('psql: error: connection to server on socket "/nonexistent/.s.PGSQL.5499" failed: '
             "No such file or directory\n\tIs the server running locally and accepting "
             "connections on that socket?\n")
NO_ROLE = ('psql: error: connection to server at "127.0.0.1", port 5432 failed: '
           'FATAL:  role "nosuchrole" does not exist\n')


@pytest.mark.parametrize(("stderr", "cause"), [
    (BAD_VALUE, 'invalid value for parameter "work_mem": "lots"'),
    (BAD_VALUE_FROM_STDIN, 'invalid value for parameter "work_mem": "lots"'),
    (NO_ROLE, 'role "nosuchrole" does not exist'),
    (NO_SOCKET, 'connection to server on socket "/nonexistent/.s.PGSQL.5499" failed: '
                "No such file or directory"),
])
def test_the_first_line_is_the_cause_then_the_command_and_its_output(stderr, cause):
    error = CommandFailed(Result("psql -d postgres  (as postgres): alter system ...", 3, "",
                                 stderr))
    first, detail = str(error).split("\n", 1)
    assert first == cause
    assert detail.startswith("`psql -d postgres  (as postgres): alter system ...` exited 3: ")


def test_output_without_a_recognisable_cause_keeps_the_plain_message():
    error = CommandFailed(Result("zfs set x=y tank", 1, "", "cannot set property\n"))
    assert str(error) == "`zfs set x=y tank` exited 1: cannot set property"
