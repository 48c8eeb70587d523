"""The local runtime: what `memory-engine dev` runs in place of AWS.

These modules are drivers, not library code: like the Lambda functions on AWS they sit outside the
layers and wire them together, so they may import :mod:`memory_engine.bootstrap`, ``http/`` and
``services/``. ``adapters/`` never imports them (a test walks the imports).

Here, because each one *calls* the engine the way an AWS service would:

- ``http_gateway``, ``routing``, ``apigw_events``, ``workers``: API Gateway and Lambda's scale-out
  (HTTP requests become HTTP API events for the same handlers, in worker processes);
- ``lambda_runtime``: loads ``functions/<name>/handler.py`` and calls it with a Lambda context;
- ``pipeline``: Step Functions (the ingestion state machine run in-process, the local starter);
- ``event_queue``: EventBridge -> SQS -> the extraction Lambda;
- ``drop_folder``, ``s3_events``: S3 uploads and their "Object Created" events;
- ``expiry_sweeper``: the EventBridge Scheduler schedule of the expiry Lambda;
- ``priority``: the CPU priority of the engine's background threads and database backends;
- ``background``, ``engine``, ``container``: the engine's services, its start/stop, its composition root.

Still in ``local/adapters/``, because each one implements a port or backs an adapter that does:
``blob_store`` (BlobStore, the S3 stand-in), ``onnx_embedder`` (Embedder), ``event_sinks``
(EventPublisher, DeadLetterSink), ``upload_inbox`` (UploadInbox, the presigned-PUT stand-in),
``files`` (atomic writes for those) and ``embedded_postgres`` (the server behind ``DATABASE_URL``
when none is given, as RDS is on AWS: tests and the CLI start it without the rest of the runtime).
"""
