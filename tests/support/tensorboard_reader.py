"""Reads a TensorBoard log folder back the way TensorBoard does, printing what it saw as JSON.

Run as ``python -m tests.support.tensorboard_reader LOGDIR`` (a fresh interpreter): it forces
TensorBoard's own stub of TensorFlow (the one it uses where TensorFlow is not installed), so
reading never loads TensorFlow, then loads LOGDIR with TensorBoard's event multiplexer and asks
the HParams plugin's own request handlers for the experiment and the session groups, with the
filters its dashboard starts with (every value of each hparam's domain). Output::

    {"scalars": {run: {tag: [[step, value], ...]}},
     "experiment": <GetExperiment response>, "session_groups": <ListSessionGroups response>,
     "tensorflow_loaded": false}
"""

from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

#: Its presence in sys.modules makes tensorboard.compat.tf the stub (see tensorboard/compat).
NO_TENSORFLOW = "tensorboard.compat.notf"


def default_filters(experiment: Any) -> list[Any]:
    """One ColParams per hparam, filtered as the dashboard starts: every value of its domain."""
    from tensorboard.plugins.hparams import api_pb2

    params = []
    for info in experiment.hparam_infos:
        param = api_pb2.ColParams(hparam=info.name)
        if info.HasField("domain_discrete"):
            param.filter_discrete.CopyFrom(info.domain_discrete)
        elif info.HasField("domain_interval"):
            param.filter_interval.min_value = info.domain_interval.min_value
            param.filter_interval.max_value = info.domain_interval.max_value
        params.append(param)
    for info in experiment.metric_infos:
        params.append(api_pb2.ColParams(metric=info.name))
    return params


def read(logdir: str) -> dict[str, Any]:
    """What TensorBoard reads from ``logdir`` (see the module's docstring)."""
    sys.modules.setdefault(NO_TENSORFLOW, types.ModuleType(NO_TENSORFLOW))
    from google.protobuf import json_format
    from tensorboard import context
    from tensorboard.backend.event_processing import data_provider, plugin_event_multiplexer
    from tensorboard.plugins import base_plugin
    from tensorboard.plugins.hparams import (
        api_pb2,
        backend_context,
        get_experiment,
        list_session_groups,
    )
    from tensorboard.util import tensor_util

    statuses = [
        api_pb2.STATUS_UNKNOWN,
        api_pb2.STATUS_SUCCESS,
        api_pb2.STATUS_FAILURE,
        api_pb2.STATUS_RUNNING,
    ]
    multiplexer = plugin_event_multiplexer.EventMultiplexer()
    multiplexer.AddRunsFromDirectory(logdir)
    multiplexer.Reload()
    provider = data_provider.MultiplexerDataProvider(multiplexer, logdir)
    tb_context = base_plugin.TBContext(data_provider=provider, logdir=logdir)
    hparams = backend_context.Context(tb_context)
    request_context = context.RequestContext()
    experiment = get_experiment.Handler(
        request_context, hparams, "", api_pb2.GetExperimentRequest()
    ).run()
    request = api_pb2.ListSessionGroupsRequest(
        allowed_statuses=statuses,
        col_params=default_filters(experiment),
        start_index=0,
        slice_size=1000,
    )
    groups = list_session_groups.Handler(request_context, hparams, "", request).run()
    scalars: dict[str, dict[str, list[list[float]]]] = {}
    for run, tags in multiplexer.PluginRunToTagToContent("scalars").items():
        scalars[run] = {
            tag: [
                [event.step, float(tensor_util.make_ndarray(event.tensor_proto))]
                for event in multiplexer.Tensors(run, tag)
            ]
            for tag in tags
        }
    return {
        "scalars": scalars,
        "experiment": json_format.MessageToDict(experiment),
        "session_groups": json_format.MessageToDict(groups),
        "tensorflow_loaded": "tensorflow" in sys.modules,
    }


def read_in_fresh_interpreter(logdir: Path) -> dict[str, Any]:
    """:func:`read` run as ``python -m tests.support.tensorboard_reader LOGDIR`` in a fresh
    interpreter from the repository root (so no module the test imported leaks into it)."""
    completed = subprocess.run(
        [sys.executable, "-m", __name__, str(logdir)],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    result: dict[str, Any] = json.loads(completed.stdout)
    return result


if __name__ == "__main__":
    print(json.dumps(read(sys.argv[1])))
