"""Facts: pure parsers of what hosts print.

Every function here takes text a host printed and returns plain data. None of
them runs a command, so each can be tested from a captured or documented
fixture (tests/remote/fixtures/) without a host; apps.remote.gather decides
what to run and feeds the output here.
"""
