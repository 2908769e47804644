"""Log parsers and the resolution rule (the SWE-bench harness's), and the spec table against the real dataset."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coder.batch import grading
from coder.batch.envs import EnvUnavailable, check_buildable, load_spec_table, spec_for
from coder.batch.evaluate import eval_test_command, get_test_directives
from coder.batch.instances import Instance, load_instances

LITE_DEV = Path(__file__).with_name("data") / "swebench_lite_dev.jsonl"  # a copy: no ../shared needed

PYTEST_LOG = """\
============================= test session starts ==============================
collected 4 items

tests/test_a.py ..F.                                                     [100%]

=================================== FAILURES ===================================
=========================== short test summary info ============================
PASSED tests/test_a.py::test_one
PASSED tests/test_a.py::test_param[a-b]
PASSED tests/test_a.py::test_path[/tmp/x/y/file.dcm]
FAILED tests/test_a.py::test_two - AssertionError: assert 1 == 2
XFAIL tests/test_a.py::test_known - reason
ERROR tests/test_a.py::test_fixture_broken
SKIPPED [1] tests/test_a.py:40: needs numpy
========================= 1 failed, 3 passed in 0.12s ==========================
"""

DJANGO_LOG = """\
test_basic (queries.tests.Queries1Tests) ... ok
test_ticket_123 (queries.tests.Queries1Tests)
Docstring first line ... FAIL
test_error (queries.tests.Queries2Tests) ... ERROR
test_skip (queries.tests.Queries2Tests) ... skipped 'no db'
test_noisy (queries.tests.Queries3Tests) ... some output
ok
======================================================================
FAIL: test_other (queries.tests.Queries4Tests)
"""

SYMPY_LOG = """\
============================= test process starts ==============================
sympy/core/tests/test_basic.py[3]
test_structure ok
test_equality F
test_matches_basic E
________________________________ slowest tests _________________________________
______________ sympy/core/tests/test_basic.py:test_equality _______________
"""


def test_pytest_parser_statuses():
    sm = grading.parse_log_pytest(PYTEST_LOG)
    assert sm["tests/test_a.py::test_one"] == "PASSED"
    assert sm["tests/test_a.py::test_two"] == "FAILED"
    assert sm["tests/test_a.py::test_known"] == "XFAIL"
    assert sm["tests/test_a.py::test_fixture_broken"] == "ERROR"
    assert sm["tests/test_a.py::test_path[/tmp/x/y/file.dcm]"] == "PASSED"


def test_pytest_options_parser_cuts_absolute_path_params():
    sm = grading.parse_log_pytest_options(PYTEST_LOG)
    assert sm["tests/test_a.py::test_path[/file.dcm]"] == "PASSED"
    assert sm["tests/test_a.py::test_param[a-b]"] == "PASSED"


def test_django_parser():
    sm = grading.parse_log_django(DJANGO_LOG)
    assert sm["test_basic (queries.tests.Queries1Tests)"] == "PASSED"
    assert sm["Docstring first line"] == "FAILED"
    assert sm["test_error (queries.tests.Queries2Tests)"] == "ERROR"
    assert sm["test_skip (queries.tests.Queries2Tests)"] == "SKIPPED"
    assert sm["test_noisy (queries.tests.Queries3Tests)"] == "PASSED"  # "ok" on the next line
    assert sm["test_other"] == "FAILED"


def test_sympy_parser():
    sm = grading.parse_log_sympy(SYMPY_LOG)
    assert sm["test_structure"] == "PASSED"
    assert sm["test_equality"] == "FAILED"
    assert sm["test_matches_basic"] == "ERROR"
    assert sm["sympy/core/tests/test_basic.py:test_equality"] == "FAILED"


def test_parser_lookup_by_harness_names():
    assert grading.parser_for("parse_log_pydicom") is grading.parse_log_pytest_options
    assert grading.parser_for("parse_log_sqlfluff") is grading.parse_log_pytest
    assert grading.parser_for("parse_log_django") is grading.parse_log_django
    assert grading.parser_for("sympy") is grading.parse_log_sympy


@pytest.mark.parametrize("sm,expected", [
    ({"f1": "PASSED", "f2": "PASSED", "p1": "PASSED"}, "resolved"),
    ({"f1": "PASSED", "f2": "FAILED", "p1": "PASSED"}, "partially"),
    ({"f1": "PASSED", "f2": "XFAIL", "p1": "PASSED"}, "resolved"),
    ({"f1": "FAILED", "f2": "FAILED", "p1": "PASSED"}, "not"),
    ({"f1": "PASSED", "f2": "PASSED", "p1": "FAILED"}, "not"),
    ({"f1": "PASSED", "f2": "PASSED"}, "not"),  # a PASS_TO_PASS test missing from the log counts as failed
    ({"f1": "PASSED", "f2": "PASSED", "p1": "SKIPPED"}, "resolved"),  # neither passed nor failed: not counted
])
def test_resolution_rule(sm, expected):
    report = grading.tests_report(sm, ["f1", "f2"], ["p1"])
    assert grading.resolution(report) == expected


def test_markers_bound_the_section():
    log = f"noise PASSED x::y\n{grading.START_TEST_OUTPUT}\nPASSED a::b\n{grading.END_TEST_OUTPUT}\nPASSED c::d"
    assert grading.parse_log_pytest(grading.test_section(log)) == {"a::b": "PASSED"}
    assert grading.test_section("no markers") is None


def test_spec_table_covers_the_lite_dev_split():
    table = load_spec_table()
    insts = load_instances(LITE_DEV)
    assert len(insts) == 23
    for inst in insts:
        spec = spec_for(inst, table)
        assert spec.install and spec.test_cmd.startswith("pytest")
        cmd = eval_test_command(inst, spec)  # the record's eval_script test command
        assert cmd.startswith("pytest -rA "), (inst.instance_id, cmd)
        assert all(d in cmd for d in get_test_directives(inst)), (inst.instance_id, cmd)
    astroid_old = next(i for i in insts if i.repo == "pylint-dev/astroid" and i.version == "2.10")
    old_spec = spec_for(astroid_old, table)
    assert old_spec.python, "no Python 3.9 on this machine: install one (`pyenv install 3.9`)"
    assert old_spec.key.endswith("-py39")  # the harness's Python for astroid 2.10, found here: buildable
    check_buildable(old_spec)
    old_spec.python = ""  # a machine without Python 3.9: refused, with the reason and what to install
    with pytest.raises(EnvUnavailable, match="and no python3.9 was found"):
        check_buildable(old_spec)
    pyvista = next(i for i in insts if i.repo == "pyvista/pyvista")
    with pytest.raises(EnvUnavailable, match="system packages"):
        check_buildable(spec_for(pyvista, table))
    assert spec_for(next(i for i in insts if i.repo == "pydicom/pydicom"), table).log_parser == "parse_log_pydicom"


def test_django_directives_are_module_labels():
    inst = Instance(instance_id="django__django-1", repo="django/django",
                    test_patch="diff --git a/tests/queries/tests.py b/tests/queries/tests.py\n"
                               "diff --git a/tests/queries/fixtures/x.json b/tests/queries/fixtures/x.json\n")
    assert get_test_directives(inst) == ["queries.tests"]


def test_spec_table_is_plain_data():
    raw = json.loads((Path(grading.__file__).with_name("data") / "swebench_specs.json").read_text())
    assert "SWE-bench" in raw["_source"]
    assert raw["repos"]["pvlib/pvlib-python"]["versions"]["0.9"]["pip_packages"] == [
        "jupyter", "ipython", "matplotlib", "pytest", "flake8"]
