"""The embedded default never loads the queue library: an eval on SQLite, in a fresh process."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from _processes import child_env

SCRIPT = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from wopeval.cli.main import COMMANDS
    for deferred in COMMANDS:  # every command loaded, `worker` and `serve` included
        deferred.load()
    from wopeval.hosting.host import Host
    from wopeval.settings import Settings
    from wopeval.wire.principal import Principal
    from wopeval.wire.runs import CreateRunRequest

    async def main() -> None:
        host = await Host.start(Settings(data_dir=Path(sys.argv[1]), api_keys={"t": "k" * 24}))
        try:
            principal = host.auth.authenticate("Bearer " + "k" * 24)
            request = CreateRunRequest(
                mode="eval",
                evalSuiteRef="conformance-eval-regression-base",
                agentId="conformance.scripted-agent",
            )
            run = await host.engine.create_eval_run(principal, request)
            await host.engine.wait_idle()
            print((await host.engine.get_run(principal, run.run_id)).status.value)
        finally:
            await host.stop()

    asyncio.run(main())
    loaded = sorted(name for name in sys.modules if name.split(".")[0] == "procrastinate")
    print("loaded:", loaded)
    """
)


def test_an_embedded_eval_on_sqlite_never_imports_procrastinate(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "data")],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["completed", "loaded: []"], done.stdout
