import pytest

from apps.wal.core.segments import (
    BadWal,
    Segment,
    format_lsn,
    parse_lsn,
    parse_name,
    segment_of,
)


def test_names_and_numbers_round_trip():
    segment = parse_name("000000010000000A000000FF")
    assert segment == Segment(1, 0xA * 256 + 0xFF)
    assert segment.name() == "000000010000000A000000FF"
    assert Segment(1, segment.number + 1).name() == "000000010000000B00000000"


def test_an_lsn_lies_in_its_segment():
    assert parse_lsn("16/B374D848") == 0x16B374D848
    assert format_lsn(0x16B374D848) == "16/B374D848"
    assert segment_of(parse_lsn("0/3000028"), 1).name() == "000000010000000000000003"
    assert segment_of(parse_lsn("0/3000028"), 1, 64 * 2**20).name() == (
        "000000010000000000000000")


@pytest.mark.parametrize("text", ["", "0/", "/1", "1/2/3", "x/1", "123456789/0", " ; rm",
                                  "0x1/2", "1 /2"])
def test_what_is_not_an_lsn_is_refused(text):
    with pytest.raises(BadWal):
        parse_lsn(text)


@pytest.mark.parametrize("text", ["00000001000000000000000", "000000010000000000000100",
                                  "00000000000000000000000A", "000000010000000000000003.tmp",
                                  "00000001.history", "000000010000000000000003.partial"])
def test_what_is_not_a_segment_name_is_refused(text):
    with pytest.raises(BadWal):
        parse_name(text)
