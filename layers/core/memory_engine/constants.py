"""Names shared by the package, the Lambda functions and the CDK app.

Environment variable names are part of the product contract (SPEC "Configuration"):
change them here and nowhere else.
"""

from __future__ import annotations

# --- environment variables (SPEC contract) ---
ENV_HOME = "MEMORY_ENGINE_HOME"
ENV_DATABASE_URL = "DATABASE_URL"
ENV_EMBEDDING_PROVIDER = "EMBEDDING_PROVIDER"
ENV_EMBEDDING_MODEL = "EMBEDDING_MODEL"
ENV_EMBEDDING_DIMENSIONS = "EMBEDDING_DIMENSIONS"
ENV_CHAT_PROVIDER = "CHAT_PROVIDER"
ENV_CHAT_MODEL = "CHAT_MODEL"
ENV_OPENAI_BASE_URL = "OPENAI_BASE_URL"
ENV_OPENAI_API_KEY = "OPENAI_API_KEY"
ENV_AWS_REGION = "AWS_REGION"
ENV_CLIENT_URL = "MEMORY_ENGINE_URL"  # clients (`memory-engine mcp`, the Python client): the engine's URL
ENV_CLIENT_API_KEY = "MEMORY_ENGINE_API_KEY"  # ... and the API key they send
ENV_INGEST_WORKERS = "INGEST_WORKERS"  # local shape: ingestion runs in flight at once (default: sized to the machine)
ENV_OCR_ENGINE = "OCR_ENGINE"  # the built-in ocr converter: auto | tesseract | textract | none
ENV_OCR_LANGUAGES = "OCR_LANGUAGES"  # Tesseract's -l, e.g. eng or deu+eng
ENV_FOREGROUND_WAIT_MS = "FOREGROUND_WAIT_MS"  # local shape: how long an ingestion model call waits for requests in flight
ENV_INGEST_YIELD_CORES = "INGEST_YIELD_CORES"  # local shape: ingestion keeps half the cores while requests are in flight
#: The API's public origin, for URLs the engine hands out (converter callback and download URLs);
#: locally the engine's own address by default, on AWS the HTTP API's endpoint (set by the CDK app)
ENV_PUBLIC_URL = "MEMORY_ENGINE_PUBLIC_URL"
#: How long ingestion waits for a converter that answered `pending` (its callback URL expires then too)
ENV_CONVERTER_DEADLINE_SECONDS = "CONVERTER_DEADLINE_SECONDS"
#: Hosts a converter URL may name although they are not public addresses (loopback, private, link-local...):
#: comma-separated `host` or `host:port`; empty by default (domain/outbound.py has the rule)
ENV_CONVERTER_ALLOWED_HOSTS = "CONVERTER_ALLOWED_HOSTS"
#: Seconds an authenticated API key is cached per process (revocation takes effect within it).
ENV_KEY_CACHE_SECONDS = "MEMORY_ENGINE_KEY_CACHE_SECONDS"
ENV_SEARCH_CONNECTIONS = "MEMORY_ENGINE_SEARCH_CONNECTIONS"
#: The embedded PostgreSQL's ``shared_buffers`` (a PostgreSQL size), instead of a quarter of the memory.
ENV_PG_SHARED_BUFFERS = "MEMORY_ENGINE_PG_SHARED_BUFFERS"

# --- AWS-only environment variables (set by the CDK app on each function) ---
ENV_DATABASE_SECRET_ARN = "DATABASE_SECRET_ARN"  # Secrets Manager secret with host/port/dbname/username
ENV_DATABASE_IAM_AUTH = "DATABASE_IAM_AUTH"  # "true": connect with an RDS IAM auth token
ENV_DOCUMENTS_BUCKET = "DOCUMENTS_BUCKET"
ENV_EVENT_BUS_NAME = "EVENT_BUS_NAME"
ENV_STATE_MACHINE_ARN = "INGESTION_STATE_MACHINE_ARN"
#: the Express state machine for small documents (same definition; see domain/pipeline.py SMALL_DOCUMENT_BYTES)
ENV_EXPRESS_STATE_MACHINE_ARN = "INGESTION_EXPRESS_STATE_MACHINE_ARN"
ENV_EXTRACTION_QUEUE_URL = "EXTRACTION_QUEUE_URL"  # POST /v1/memories/{id}/turns with extract: true queues here
ENV_EXTRACTION_DLQ_URL = "EXTRACTION_DLQ_URL"  # rejected (invalid) events go here at once, with the reason
ENV_RUNTIME = "MEMORY_ENGINE_RUNTIME"  # "aws" or "local"
#: Secrets Manager secret whose value signs converter callback URLs (locally a file under $MEMORY_ENGINE_HOME)
ENV_CALLBACK_SECRET_ARN = "CONVERTER_CALLBACK_SECRET_ARN"

# --- local runtime only ---
#: Where the local runtime loads ``<name>/handler.py`` from (default: the repository's functions/).
ENV_FUNCTIONS_DIR = "MEMORY_ENGINE_FUNCTIONS_DIR"

# --- fixed names ---
DEFAULT_PROJECT = "default"
S3_PROJECT_PREFIX = "projects/"  # uploads live under projects/<project_id>/<path>
S3_WORK_PREFIX = "_work/"  # intermediate pipeline results (pages, chunk batches)
EVENT_SOURCE = "memory-engine"
DETAIL_TYPE_TURN_COMPLETED = "turn.completed"
DETAIL_TYPE_EXTRACTION_COMPLETED = "memory.extraction.completed"
DETAIL_TYPE_MEMORY_FORGOTTEN = "memory.forgotten"
DETAIL_TYPE_DOCUMENT_READY = "document.ready"
DETAIL_TYPE_DOCUMENT_FAILED = "document.failed"

# Which Lambda serves which HTTP route. The CDK app wires API Gateway from this table and the
# local dev server dispatches with it, so both shapes send a request to the same handler.
FUNCTION_API = "api"
FUNCTION_SEARCH = "search"
FUNCTION_INGESTION = "ingestion"
FUNCTION_EXTRACTION = "extraction"
FUNCTION_EXPIRY = "expiry"
SEARCH_ROUTES = ("POST /v1/knowledge/search",)
#: Routes of the API function deployed as explicit API Gateway routes (everything else reaches it via $default).
API_ROUTES = ("POST /v1/mcp", "POST /v1/converter-callbacks/{token}")
LOCAL_ONLY_ROUTES = ("POST /v1/events", "PUT /v1/local-uploads/{proxy+}", "GET /v1/local-downloads/{proxy+}")
#: The web console's static files, served by the API function (memory_engine/http/console.py). Named
#: routes so the console keeps working whatever else $default does; `/console/` itself (a trailing
#: slash, which HTTP API route keys cannot end with) reaches the API function through $default.
CONSOLE_ROUTES = ("GET /console", "GET /console/{proxy+}")
