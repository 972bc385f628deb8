from __future__ import annotations

import argparse
import csv

import pytest

from reuse.cli import main
from reuse.cli.placement import add_parser, parse_size, run
from reuse.placement.errors import PlacementError


def parse(argv):
    p = argparse.ArgumentParser(prog="reuse")
    add_parser(p.add_subparsers(dest="command", required=True))
    return p.parse_args(argv)


def test_place_all_strategies_writes_csv(tmp_path, capsys):
    out = tmp_path / "p.csv"
    args = parse(["place", "--strategy", "all", "--infra-size", "10,10,10", "--app-size", "9",
                  "--seed", "1", "--out", str(out)])
    assert run(args) == 0
    text = capsys.readouterr().out
    assert "aels+rp+la" in text and "tcep" in text
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 5 * 9 and {r["strategy"] for r in rows} >= {"aels", "cloud-only"}


def test_place_eval_tiny(tmp_path, capsys):
    assert run(parse(["place", "eval", "--scale", "tiny", "--out", str(tmp_path)])) == 0
    assert (tmp_path / "runs.csv").exists() and (tmp_path / "report.txt").exists()
    assert list(tmp_path.glob("fig*.png"))
    assert "Tables 5-7" in capsys.readouterr().out


def test_errors_are_one_line(capsys):
    with pytest.raises(PlacementError):
        parse_size("1,2")
    assert main(["place", "--strategy", "bogus"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("reuse: error: unknown strategy") and "\n" not in err
