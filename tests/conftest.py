import pytest

pytest.register_assert_rewrite("tests.store_contract")
