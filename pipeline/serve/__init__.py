"""Serving a trained model over HTTP: `python -m pipeline.serve --model runs/<name>`.

    POST /predict {"texts": ["Stocks rally as oil falls"]}  ->  {"rows": [{"label": "Business", "score": 0.93, ...}]}

The rows are those `pipeline.predict` adds to a file's rows for the same texts. Requests that arrive close together
are labelled in one batch, on one thread, while the event loop keeps accepting requests.

Modules: settings (ServeSettings, from options or PIPELINE_SERVE_* variables), inputs (a body's texts), rows (the
answers), batching (the dynamic batcher), limits (bearer token, body size), metrics (Prometheus), info (/info),
app (the ASGI app, `create_app`), cli (the command). fastapi, uvicorn and prometheus_client come with the `serve`
extra; only app, limits and metrics import them.
"""

from pipeline.serve.settings import ServeError, ServeSettings

__all__ = ["ServeError", "ServeSettings"]
