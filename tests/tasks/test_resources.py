from __future__ import annotations

from reuse.tasks.resources import read_arff, read_metadata_map, read_properties, read_schema


def test_properties_values_and_fit_continuation(data_dir):
    city = read_properties(data_dir / "tasks_CITY.properties")
    assert city["FILTER.RANGE_FILTER.VALID_RANGE"].startswith("temperature:-12.5:43.1")
    assert city["FILTER.RANGE_FILTER.USE_MSG_FIELD"] == "0"  # spaces around '='
    fit = read_properties(data_dir / "tasks_FIT.properties")
    # the FIT range is broken over two lines after a trailing comma
    assert fit["FILTER.RANGE_FILTER.VALID_RANGE"].endswith("acc_arm_z:-6.6739:9.5725")
    assert fit["FILTER.RANGE_FILTER.VALID_RANGE"].count(":") == 22


def test_schema_and_metadata(data_dir):
    schema = read_schema(data_dir / "sys-schema_without_annotationfields.txt")
    assert schema[4] == ("temperature", "far", "v")
    meta = read_metadata_map(data_dir / "city-metadata.txt")
    assert meta["ci4lnqzte000002xpokc9d25v0"] == ["building4", "analog"]


def test_arff_full_and_header_plus_rows(data_dir):
    a = read_arff(data_dir / "DecisionTreeClassify-SYS.arff")
    assert a.names[-1] == "result" and a.nominal[-1] == ["Good", "Bad"]
    assert len(a.rows) == 800
    b = read_arff(data_dir / "DecisionTreeClassifyHeaderOnly-TAXI.arff",
                  data_dir / "filename-DTC-sample.txt")
    assert len(b.names) == 4 and len(b.rows) == 4680
