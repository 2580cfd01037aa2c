def test_create_and_get(run):
    created = run.json("create", "Write parser")
    assert created["id"] == 1
    assert run.json("get", "1")["subject"] == "Write parser"


def test_missing_task_json_error(run):
    result = run("get", "42", "--json", expect=3)
    assert result.stdout == ""
    assert result.stderr.strip().splitlines()[-1] == '{"error": {"code": "not_found", "message": "no task #42", "exit": 3}}'
