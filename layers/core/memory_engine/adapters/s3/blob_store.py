"""BlobStore on an S3 bucket (the documents bucket; pipeline work objects under ``_work/``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from boto3.exceptions import S3UploadFailedError
from botocore.exceptions import ClientError

from memory_engine.errors import NotFound
from memory_engine.ports.blobs import BlobInfo, BlobStoreError, PresignedUpload

_MISSING = {"404", "NoSuchKey", "NotFound"}


class S3BlobStore:
    """Takes its boto3 S3 client (moto-backed in tests)."""

    def __init__(self, client: Any, bucket: str) -> None:
        self._s3 = client
        self.bucket = bucket

    def get(self, key: str) -> bytes:
        try:
            body: bytes = self._s3.get_object(Bucket=self.bucket, Key=key)["Body"].read()
            return body
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in _MISSING:
                raise NotFound(f"object s3://{self.bucket}/{key} not found") from exc
            raise BlobStoreError(f"S3 get_object failed for {key}: {exc}") from exc

    def put(self, key: str, data: bytes, *, content_type: str | None = None,
            metadata: dict[str, str] | None = None) -> None:
        args: dict[str, Any] = {"Bucket": self.bucket, "Key": key, "Body": data}
        if content_type:
            args["ContentType"] = content_type
        if metadata:
            args["Metadata"] = metadata
        try:
            self._s3.put_object(**args)
        except ClientError as exc:
            raise BlobStoreError(f"S3 put_object failed for {key}: {exc}") from exc

    def put_file(self, key: str, source: Path, *, content_type: str | None = None) -> None:
        """Streamed (multipart above boto3's threshold). Raises FileNotFoundError when ``source`` is gone."""
        extra = {"ContentType": content_type} if content_type else None
        try:
            self._s3.upload_file(str(source), self.bucket, key, ExtraArgs=extra)
        except (ClientError, S3UploadFailedError) as exc:
            raise BlobStoreError(f"S3 upload failed for {key}: {exc}") from exc

    def head(self, key: str) -> BlobInfo | None:
        try:
            r = self._s3.head_object(Bucket=self.bucket, Key=key)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in _MISSING:
                return None
            raise BlobStoreError(f"S3 head_object failed for {key}: {exc}") from exc
        return BlobInfo(key=key, size=int(r.get("ContentLength", 0)), content_type=r.get("ContentType"),
                        metadata=dict(r.get("Metadata") or {}), etag=(r.get("ETag") or "").strip('"') or None)

    def delete(self, key: str) -> None:
        try:
            self._s3.delete_object(Bucket=self.bucket, Key=key)
        except ClientError as exc:
            raise BlobStoreError(f"S3 delete_object failed for {key}: {exc}") from exc

    def delete_prefix(self, prefix: str) -> int:
        deleted = 0
        try:
            paginator = self._s3.get_paginator("list_objects_v2")
            for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix):
                keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
                if keys:
                    self._s3.delete_objects(Bucket=self.bucket, Delete={"Objects": keys, "Quiet": True})
                    deleted += len(keys)
        except ClientError as exc:
            raise BlobStoreError(f"S3 delete under {prefix} failed: {exc}") from exc
        return deleted

    def presign_get(self, key: str, *, expires_in: int = 3600) -> str:
        url: str = self._s3.generate_presigned_url(
            "get_object", Params={"Bucket": self.bucket, "Key": key}, ExpiresIn=expires_in, HttpMethod="GET",
        )
        return url

    def presign_put(self, key: str, *, content_type: str, expires_in: int = 3600) -> PresignedUpload:
        url = self._s3.generate_presigned_url(
            "put_object", Params={"Bucket": self.bucket, "Key": key, "ContentType": content_type},
            ExpiresIn=expires_in, HttpMethod="PUT",
        )
        return PresignedUpload(url=url, method="PUT", headers={"Content-Type": content_type}, key=key,
                               expires_at=datetime.now(UTC) + timedelta(seconds=expires_in))
