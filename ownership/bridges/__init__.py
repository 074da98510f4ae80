"""The bridges to real code: where ownership meets the engines it models, not a spec.

Everything else in the package works on specs and their models; the modules here take what
real SGLang and vLLM code does and hold it to the same kernel and specs:

- `monitor`: a log of page events (JSON lines from a running server or a recording) checked
  online by the kernel's properties (`ownership monitor`);
- `follow`: a spec run along such a log through the user's adapter (`monitor --spec`);
- `record`: hooks over a real engine's allocators and KV handoff that write that log;
- `testing`: for a team's own pytest suite: `check_spec`, and the conformance harness that
  drives real code beside the model;
- `pytest_plugin`: the pytest plugin (entry point `pytest11`) with the options of `testing`.

They stand on the rest (the language, interpreters, engines, traces) and nothing below them
imports them; the CLI's `monitor` and `replay` commands do. No engine is imported here: the
hooks use only the real objects' own methods.
"""
