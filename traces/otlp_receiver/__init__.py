"""The OTLP/HTTP receiver: agents' OpenTelemetry exporters send spans to `/v1/traces` while they
run; each trace becomes an upload of its spans as OTLP/JSON once it is complete.

- `decode` turns a request body (protobuf or OTLP/JSON, gzip/deflate or not) into span rows.
- `store` buffers them (one insert per request, deduplicated by trace and span id), decides
  when a trace is complete and hands it to the OTLP importer through an ordinary upload.
- `views` is the endpoint: token, limits, the OTLP responses.
- `tasks` runs completion in the workers; the stale-work sweep finishes quiet traces.
"""
