"""Runs `ansible-inventory -i PATH --list` for many inventories in one Python process.

Each run is Ansible's own InventoryCLI, as the ansible-inventory command runs
it, with its global CLI arguments reset between runs; starting Python and
importing Ansible once instead of once per inventory is what makes a few
thousand cases fit in CI. Reads a JSON list of paths on stdin, writes a JSON
list of {"path", "list"} or {"path", "error"} on stdout.
"""
import contextlib
import io
import json
import sys

from ansible.cli.inventory import InventoryCLI
from ansible.utils.context_objects import GlobalCLIArgs

results = []
for path in json.load(sys.stdin):
    target = path + '.ansible-list.json'
    log = io.StringIO()
    code = None
    GlobalCLIArgs._Singleton__instance = None
    try:
        with contextlib.redirect_stderr(log), contextlib.redirect_stdout(log):
            InventoryCLI(['ansible-inventory', '-i', path, '--list', '--output', target]).run()
    except SystemExit as exit:
        code = exit.code
    except BaseException as error:  # an Ansible error is a result, not a crash of the batch
        code = repr(error)
    if code == 0:
        with open(target) as listed:
            results.append({'path': path, 'list': json.load(listed)})
    else:
        results.append({'path': path, 'error': (log.getvalue().strip() or str(code))[-2000:]})
json.dump(results, sys.stdout)
