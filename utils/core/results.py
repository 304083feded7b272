"""Recorded GPU results, written only by the course's own benchmark code on a real GPU, and
shown (labelled with the device that produced them) on machines without one.

Layout: one file per notebook **per device**, ``results/<device-slug>/<notebook-stem>.json``,
e.g. ``results/nvidia-h100-80gb-hbm3/03_triton_tma_gemm.json`` and
``results/nvidia-h200/03_triton_tma_gemm.json``; the slug is the CUDA device name, lower-case,
runs of other characters turned into ``-`` (``device_slug``). Files of the older layout,
``results/<stem>.json``, still load: their device is read from inside them, and a file in a
device folder wins over an old one for the same device.

File format::

    {"device", "capability", "sm_count", "driver", "cuda", "versions": {...}, "date", "commit",
     "command", "rows": [{"name", "metric", "value", "reference", "reference_value", "ratio",
               "shape", "dtype", ...}]}

``versions`` holds python, numpy, torch, triton, cupy, cuda-bindings, nvidia-cutlass-dsl and
matplotlib as installed; ``commit`` the course's git commit (``+changes`` if the tree differed);
``command`` is ``$COURSE_RECORD_COMMAND`` when set (e.g. by ``course.sh``), else the notebook's
nbval run. Rows from ``utils.core.bench.compare`` also carry ``ms``, ``timing``
("sustained" or "burst"), ``rounds``, ``ms_rounds`` and the ratio's spread ``ratio_lo`` /
``ratio_hi``; rows recorded by the older burst harness lack these keys and still load.

One file is one run of one notebook: the first ``record_or_load`` of a notebook's run (one
Python process) starts the file afresh, later ones in the same run add their rows to it, so
every row in a file was produced by the notebook's own code in that run.

On the cpu tier a notebook shows one device's recording: ``$COURSE_RESULTS_DEVICE`` (e.g.
``h100``) if set, else the GPU that recorded the most notebooks (:func:`default_device`), the
same in every cell of the course (a notebook it never recorded shows its most recent recording);
its label names that device and the others that recorded the notebook. The results gallery
shows every device side by side.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
ROW_KEYS = ("name", "metric", "value", "reference", "reference_value", "ratio", "shape", "dtype")
METRICS = ("GB/s", "TFLOP/s", "ns", "ms", "cycles", "count", "bytes", "MHz")
DEVICE_ENV = "COURSE_RESULTS_DEVICE"   # which device's recording the notebooks show on the cpu tier
_RECORDED_THIS_RUN: set = set()        # (slug, stem) saved by this process: later saves merge


def results_dir() -> pathlib.Path:
    """``$COURSE_RESULTS_DIR`` if set, else the project's ``results/`` folder."""
    return pathlib.Path(os.environ.get("COURSE_RESULTS_DIR", ROOT / "results"))


def device_slug(name: str) -> str:
    """``"NVIDIA H100 80GB HBM3"`` -> ``"nvidia-h100-80gb-hbm3"``: the device's folder name."""
    if not isinstance(name, str) or not re.search(r"[A-Za-z0-9]", name):
        raise ValueError(f"device name must be a non-empty string, got {name!r}")
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def _check_stem(stem):
    if not isinstance(stem, str) or not stem or "/" in stem or stem.endswith(".json"):
        raise ValueError(f"stem must be a notebook stem like '01_tma_concepts', got {stem!r}")


def validate_rows(rows) -> None:
    """Raise ValueError naming the first row or key that breaks the format."""
    if not isinstance(rows, list) or not rows:
        raise ValueError("rows must be a non-empty list of dicts")
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise ValueError(f"row {i} is a {type(row).__name__}, not a dict")
        missing = [k for k in ROW_KEYS if k not in row]
        if missing:
            raise ValueError(f"row {i} ({row.get('name')!r}) lacks keys {missing}")
        if row["metric"] not in METRICS:
            raise ValueError(f"row {i}: metric {row['metric']!r} is not one of {METRICS}")
        if not isinstance(row["value"], (int, float)) or not row["value"] > 0:
            raise ValueError(f"row {i}: value must be a positive number, got {row['value']!r}")
        lo, hi, ratio = row.get("ratio_lo"), row.get("ratio_hi"), row.get("ratio")
        if (lo is None) != (hi is None) or (lo is not None and not (ratio is not None and
                                                                 lo <= ratio <= hi)):
            raise ValueError(f"row {i} ({row['name']!r}): need ratio_lo <= ratio <= ratio_hi, "
                             f"got {lo!r} <= {ratio!r} <= {hi!r}")


def _driver() -> str:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        return out.stdout.strip().splitlines()[0]
    except Exception:
        return "unknown"


def _commit() -> str:
    """The course's git commit (``+changes`` when the tree differs from it), or "unknown".
    ``$COURSE_COMMIT`` overrides it where the machine's git cannot say: a tree copied to a GPU
    machine without its history (the recording script sets it to the commit it copied)."""
    if os.environ.get("COURSE_COMMIT"):
        return os.environ["COURSE_COMMIT"]
    try:
        git = ["git", "-C", str(ROOT)]
        head = subprocess.run(git + ["rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, timeout=20, check=True).stdout.strip()
        dirty = subprocess.run(git + ["status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=20).stdout.strip()
        return head + ("+changes" if dirty else "")
    except Exception:
        return "unknown"


def machine() -> dict:
    """What produced a recording: this machine's GPU, driver, CUDA, library versions, and now.
    Refuses without a GPU: a result must come from a run."""
    import torch
    from .report import versions
    if not torch.cuda.is_available():
        raise RuntimeError("results are recorded only from a run on a real GPU")
    props = torch.cuda.get_device_properties(0)
    return {"device": props.name, "capability": f"{props.major}.{props.minor}",
            "sm_count": props.multi_processor_count, "driver": _driver(), "cuda": torch.version.cuda,
            "versions": versions(),
            "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}


def _key(row: dict) -> tuple:
    """What makes a row the same measurement: name, shape, dtype, and where a notebook sets them,
    its ``part`` (which measurement of the notebook) and ``causal``."""
    return row["name"], tuple(row.get("shape") or ()), row.get("dtype"), row.get("part"), row.get("causal")


def save(stem: str, rows: list, command: str | None = None, merge: bool = False) -> pathlib.Path:
    """Record ``rows`` measured on this machine's GPU into ``results/<device-slug>/<stem>.json``.

    With ``merge``, rows already in that file are kept unless a new row has the same name, shape,
    dtype (and ``part``/``causal`` where rows have them) (a notebook records several measurements into one file). Refuses without a GPU:
    a result must come from a run.
    """
    _check_stem(stem)
    validate_rows(rows)
    doc = dict(machine(), commit=_commit(), command=command or " ".join(sys.argv), rows=rows)
    path = results_dir() / device_slug(doc["device"]) / f"{stem}.json"
    if merge and path.exists():
        new = {_key(r) for r in rows}
        doc["rows"] = [r for r in json.loads(path.read_text())["rows"] if _key(r) not in new] + rows
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path


def documents(stem: str) -> list:
    """Every recording of ``stem``, one document per device, sorted by device name (a file in
    a device folder wins over an old-layout ``results/<stem>.json`` of the same device)."""
    _check_stem(stem)
    found = {}
    for path in [results_dir() / f"{stem}.json", *sorted(results_dir().glob(f"*/{stem}.json"))]:
        if path.is_file():
            doc = json.loads(path.read_text())
            validate_rows(doc.get("rows"))
            found[device_slug(doc["device"])] = dict(doc, path=str(path))
    return [found[k] for k in sorted(found, key=lambda k: found[k]["device"])]


def default_device() -> str | None:
    """The device folder (slug) a cell shows when ``$COURSE_RESULTS_DEVICE`` is unset: the one
    holding recordings of the most notebooks (ties: the first by name), so that every cell of
    every notebook shows the same GPU, not whichever recorded each file last. None without
    device folders."""
    if not results_dir().is_dir():
        return None
    counts = {p.name: len(list(p.glob("*.json"))) for p in results_dir().iterdir() if p.is_dir()}
    counts = {k: v for k, v in counts.items() if v}
    return min(counts, key=lambda k: (-counts[k], k)) if counts else None


def load(stem: str, device: str | None = None) -> dict:
    """One recording of ``stem``: the device whose name or slug contains ``device`` (default
    ``$COURSE_RESULTS_DEVICE``, else :func:`default_device` where it recorded ``stem``, else the
    most recent recording). The document's ``others``
    lists the other devices that recorded it. A missing file raises FileNotFoundError."""
    docs = all_docs = documents(stem)
    if not docs:
        raise FileNotFoundError(f"no recorded results for {stem!r} in {results_dir()}; they are "
                                "made by running the notebook on a Hopper GPU with COURSE_RECORD=1")
    want = device or os.environ.get(DEVICE_ENV)
    if not want:                                  # the course's default GPU, where it recorded this stem
        mine = [d for d in docs if device_slug(d["device"]) == default_device()]
        docs = mine or docs
    else:
        hits = [d for d in docs if want.lower() in d["device"].lower()
                or device_slug(want) in device_slug(d["device"])]
        if not hits:
            raise LookupError(f"no recording of {stem!r} on a device matching {want!r}; "
                              f"recorded on: {[d['device'] for d in docs]}")
        docs = hits
    pick_ = max(docs, key=lambda d: d["date"])
    return dict(pick_, others=[d["device"] for d in all_docs if d is not pick_])


def since_or_newest(stem: str, doc: dict, since: str | None) -> tuple[dict, str | None]:
    """``(doc, None)`` when ``since`` is None or ``doc`` was recorded on or after ``since``
    (``"YYYY-MM-DD"``: the date a notebook's method last changed, e.g. how its benchmark is timed);
    otherwise ``(newest, note)``: the most recent recording of ``stem`` on any device made since then,
    and a note for the label naming the recording it replaces. A notebook's claims describe the
    method of its prose: an older recording may not bear them out. LookupError if none is that new."""
    if since is None:
        return doc, None
    if not (isinstance(since, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", since)):
        raise ValueError(f"since must be a date 'YYYY-MM-DD', got {since!r}")
    if doc["date"][:10] >= since:
        return doc, None
    newer = [d for d in documents(stem) if d["date"][:10] >= since]
    if not newer:
        raise LookupError(f"no recording of {stem!r} made since {since} (this cell's method): record it on a Hopper GPU")
    best = max(newer, key=lambda d: d["date"])
    best = dict(best, others=[d["device"] for d in documents(stem) if d["path"] != best["path"]])
    return best, f"the recording on {doc['device']}, {doc['date'][:10]}, predates this cell's method of {since}"


def rows_or_latest(stem: str, rows: list, label_: str, has, what: str, tag: str) -> tuple[list, str]:
    """``(rows, label_)`` if ``has(rows)``; otherwise the rows of the most recent recording of
    ``stem`` for which ``has`` holds (a recording made before ``what`` was added to the notebook
    falls back this way), labelled ``"<tag>: recorded on ..."``. Raises LookupError naming
    ``what`` if no recording has it."""
    if has(rows):
        return rows, label_
    docs = [d for d in documents(stem) if has(d["rows"])]
    if not docs:
        raise LookupError(f"no recording of {stem!r} holds {what}: record it on a Hopper GPU")
    doc = max(docs, key=lambda d: d["date"])
    return doc["rows"], f"{tag}: {label(doc)}"


def label(doc: dict) -> str:
    """``recorded on <device>, <date>`` (plus the other devices that recorded the same notebook)."""
    text = f"recorded on {doc['device']}, {doc['date'][:10]}"
    if doc.get("others"):
        text += f"; also recorded on {', '.join(doc['others'])} (results gallery)"
    return text


def record_or_load(stem: str, measure, tier, names: tuple | None = None,
                   needs: str = "gpu", any_device: bool = False, since: str | None = None) -> tuple[list, str]:
    """If the tier provides ``needs`` (a feature of :mod:`utils.core.features` such as "gpu", "tma"
    or "wgmma", a tuple of them, or "ncu": Hopper's ``sm_90a`` with Nsight Compute), run
    ``measure()`` for fresh rows (recorded when ``COURSE_RECORD=1``); otherwise load the recorded rows (those in ``names``,
    if given: every one of them must be there). Returns ``(rows, label)``: the label says
    measured now, or recorded on which device and when. With ``any_device=True``, a stem that the
    device chosen by ``$COURSE_RESULTS_DEVICE`` never recorded loads from the latest recording of
    any device, and the label says so; so does a recording on the chosen device that lacks some of
    ``names`` (it predates them): the latest recording that has them all is shown instead. With
    ``since`` (a date), a recording made before it is replaced by the newest made since then, on any
    device (:func:`since_or_newest`), and the label says so.
    """
    if needs == "ncu":        # the counters' kernels and metric names are Hopper's (sm_90a)
        from . import ncu
        can = tier.has("sm90a") and ncu.available()
    else:
        from .tier import missing
        can = missing(tier, needs) is None       # raises "needs must be ..." for an unknown name
    if can:
        try:
            rows = measure()
        except RuntimeError as e:     # ncu is installed but this account may not read counters
            if needs != "ncu" or "ERR_NVGPUCTRPERM" not in str(e):
                raise
            print(f"[the counters were refused on this machine ({e}); showing the recording instead]")
            can = False
    if can:
        missing = sorted(set(names or ()) - {r["name"] for r in rows})
        if missing:
            raise ValueError(f"measure() made no rows named {missing}: a notebook shows only "
                             "what its own code measures")
        if os.environ.get("COURSE_RECORD") == "1":
            key = (device_slug(tier.device_name or "unknown"), stem)
            command = os.environ.get("COURSE_RECORD_COMMAND") or f"COURSE_RECORD=1 pytest --nbval-lax ({stem})"
            save(stem, rows, command=command,
                 merge=key in _RECORDED_THIS_RUN)
            _RECORDED_THIS_RUN.add(key)
        return rows, f"measured now on {tier.device_name}"
    try:
        doc = load(stem)
    except LookupError:                      # the chosen device never recorded this stem
        if not any_device:
            raise
        doc = load(stem, device=max(documents(stem), key=lambda d: d["date"])["device"])
        doc = dict(doc, chosen_missing=os.environ.get(DEVICE_ENV))
    doc, older = since_or_newest(stem, doc, since)
    if older:
        doc = dict(doc, chosen_missing=None)
    rows = doc["rows"] if names is None else [r for r in doc["rows"] if r["name"] in names]
    missing = sorted(set(names or ()) - {r["name"] for r in rows})
    if missing and any_device:               # the chosen device's recording predates these rows
        having = [d for d in documents(stem) if set(names) <= {r["name"] for r in d["rows"]}]
        if having:
            newest = max(having, key=lambda d: d["date"])
            rows = [r for r in newest["rows"] if r["name"] in names]
            return rows, (f"{label(newest)} (the recording on {doc['device']} has no rows named "
                          f"{missing}: it predates them)")
    if missing:
        raise KeyError(f"{doc['path']} has no rows named {missing}: re-record the notebook "
                       "(COURSE_RECORD=1 on a Hopper GPU)")
    if doc.get("chosen_missing"):
        return rows, f"{label(doc)} (no recording on a device matching {doc['chosen_missing']!r})"
    return rows, f"{label(doc)} ({older})" if older else label(doc)


def full_run(environ=None) -> bool:
    """True when a notebook's whole measurement is asked for: ``COURSE_FULL=1``, or
    ``COURSE_RECORD=1`` (a recording is always the full run). Otherwise a live cell measures its
    short default (about half a minute on an H100) and shows the full run's recording beside it."""
    env = os.environ if environ is None else environ
    return env.get("COURSE_FULL") == "1" or env.get("COURSE_RECORD") == "1"


def recording(stem: str, tier=None, any_device: bool = False) -> dict:
    """The recording of ``stem`` a cell shows instead of a live run: that of ``tier``'s GPU if it
    made one, else as :func:`load` picks (``$COURSE_RESULTS_DEVICE``, else :func:`default_device`); with
    ``any_device``, the latest of any device if the chosen one has none. Launches nothing."""
    own = getattr(tier, "device_name", None)
    docs = documents(stem)
    if own and any(own.lower() in d["device"].lower() for d in docs):
        return load(stem, device=own)
    try:
        return load(stem)
    except LookupError:
        if not any_device:
            raise
        return load(stem, device=max(docs, key=lambda d: d["date"])["device"])


def recorded(stem: str, why: str, tier=None, any_device: bool = False, since: str | None = None) -> tuple:
    """``(rows, label)`` of :func:`recording` ``(stem, tier, any_device)`` (or, with ``since``, the
    newest made since that date if it is older: :func:`since_or_newest`), the label saying ``why``
    it is shown instead of a live run. Launches nothing."""
    if not isinstance(why, str) or not why:
        raise ValueError("why must say why the recording is shown (e.g. 'FULL = False: ...')")
    doc, older = since_or_newest(stem, recording(stem, tier, any_device), since)
    return doc["rows"], f"{label(doc)} ({why}{'; ' + older if older else ''})"


def pick(rows: list, name: str, **match) -> dict:
    """The one row called ``name`` (optionally also matching other keys, e.g. dtype='float16')."""
    hits = [r for r in rows if r["name"] == name and all(r.get(k) == v for k, v in match.items())]
    if len(hits) != 1:
        raise KeyError(f"expected one row named {name!r} with {match}, found {len(hits)}; "
                       f"names: {sorted({r['name'] for r in rows})}")
    return hits[0]


def claim(label_: str, held: bool, text: str) -> bool:
    """Guard a sentence of the notebook's prose with the rows it is about.

    On a recording (``label_`` from :func:`record_or_load` says "recorded on ...") the prose was
    written from these rows, so a claim that does not hold is an error in the notebook: it raises
    ``AssertionError``. On rows measured now, a GPU's fresh run may differ from the recording
    within its spread; the cell prints whether the claim held on this run instead of failing, so
    the learner reads the difference rather than a traceback. Returns ``held``.
    """
    if not isinstance(label_, str) or not label_:
        raise TypeError("claim() needs the label record_or_load returned (recorded or measured now)")
    held = bool(held)
    if label_.startswith("measured now"):
        print(f"[this run: {'held' if held else 'did NOT hold'}: {text} (the prose describes the "
              "recording; a live run can differ within its spread)]")
        return held
    assert held, f"{text}: not true of the recording shown ({label_})"
    return held
