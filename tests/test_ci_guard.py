"""The suite's own guard (``tests/conftest.py``): a run in which no test passed fails.

Each case runs an inner pytest session (``pytester``, in process) on a temporary
directory whose ``conftest.py`` is a verbatim copy of the project's, so the hook under
test is the real one, not a re-implementation.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

CONFTEST = Path(__file__).with_name("conftest.py")


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST.read_text(encoding="utf-8"))
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    return pytester


def test_a_normal_run_exits_zero(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_mixed="""
        import pytest

        def test_passes():
            assert True

        @pytest.mark.skip(reason="not here")
        def test_skipped():
            pass
        """
    )
    result = project.runpytest()
    result.assert_outcomes(passed=1, skipped=1)
    assert result.ret == pytest.ExitCode.OK
    assert "no test passed" not in result.stdout.str()


def test_an_all_skipped_run_fails(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_skipped="""
        import pytest

        pytest.importorskip("no_such_module_for_omoide_tests")

        def test_never_runs():
            pass
        """,
        test_also_skipped="""
        import pytest

        @pytest.mark.skip(reason="extra not installed")
        def test_one():
            pass

        @pytest.mark.xfail(reason="known bug")
        def test_two():
            raise AssertionError
        """,
    )
    result = project.runpytest()
    result.assert_outcomes(skipped=2, xfailed=1)
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.stdout.fnmatch_lines(["*omoide: no test passed (2 selected, all skipped or xfailed): exit 5*"])


def test_an_all_deselected_run_fails(project: pytest.Pytester) -> None:
    project.makepyfile(test_some="def test_alpha():\n    pass\n\ndef test_beta():\n    pass\n")
    result = project.runpytest("-k", "no_such_test_name")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert project.runpytest("-k", "alpha").ret == pytest.ExitCode.OK  # the same selection done right passes


def test_collect_only_and_failures_keep_their_exit_codes(project: pytest.Pytester) -> None:
    project.makepyfile(test_fail="def test_fails():\n    raise AssertionError\n")
    assert project.runpytest().ret == pytest.ExitCode.TESTS_FAILED
    assert project.runpytest("--collect-only", "-q").ret == pytest.ExitCode.OK


def test_an_empty_run_still_exits_five(project: pytest.Pytester) -> None:
    assert project.runpytest().ret == pytest.ExitCode.NO_TESTS_COLLECTED
