"""Data tokens of impl's REST catalog server: the storage credentials a client is handed for one
table (``GET .../tables/<t>/token``).

By default the server hands out none (an empty token): its own storage keys are long-lived and
reach the whole warehouse, so handing them to every holder of the catalog token would make that
token a key to all the data. Clients then use their own storage credentials.

With :class:`CredentialVending` configured, each data token is a fresh set of short-lived S3
credentials from STS ``AssumeRole``, with a session policy that allows object access only under
the table's prefix (``arn:aws:s3:::bucket/<table path>/*``) and listing only of that prefix,
expiring after ``duration_seconds``. The policy is what AWS enforces; the server does not check
that an STS endpoint enforces it (moto, the tests' endpoint, records but does not enforce it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping

from impl._optional import require
from impl.fs.object_store import S3Config

# the storage options of a data token, with the names Paimon's (and impl's) S3 options use
ACCESS_KEY_OPTION = "fs.s3.accessKeyId"
SECRET_KEY_OPTION = "fs.s3.accessKeySecret"
SESSION_TOKEN_OPTION = "fs.s3.securityToken"
ENDPOINT_OPTION = "fs.s3.endpoint"
REGION_OPTION = "fs.s3.region"


@dataclass(frozen=True)
class CredentialVending:
    """Vend per-table S3 credentials through STS AssumeRole of ``role_arn`` (at ``sts_endpoint``,
    AWS's own when None), each valid ``duration_seconds`` (STS takes 900 to 43200)."""

    role_arn: str
    sts_endpoint: str | None = None
    duration_seconds: int = 900

    def __post_init__(self) -> None:
        if not 900 <= self.duration_seconds <= 43200:
            raise ValueError(f"credential vending: duration_seconds {self.duration_seconds} is not in 900..43200 "
                             "(what STS AssumeRole takes)")


def split_s3_path(path: str) -> tuple[str, str]:
    """``bucket/key/prefix`` (an S3 path as impl's file system writes it, or an s3:// URL) ->
    (bucket, key prefix without a trailing slash)."""
    bare = path.split("://", 1)[1] if "://" in path else path
    bucket, _, key = bare.strip("/").partition("/")
    return bucket, key.strip("/")


def session_policy(bucket: str, prefix: str) -> str:
    """An IAM session policy allowing reads, writes and deletes of objects under ``prefix`` of
    ``bucket``, and listing of that prefix alone."""
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
         "Resource": [f"arn:aws:s3:::{bucket}/{prefix}/*"]},
        {"Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": [f"arn:aws:s3:::{bucket}"],
         "Condition": {"StringLike": {"s3:prefix": [prefix, f"{prefix}/*"]}}},
    ]}, separators=(",", ":"))


class CredentialVendor:
    """Calls STS with the server's own S3 credentials (``storage_options``) for each data token."""

    def __init__(self, vending: CredentialVending, storage_options: Mapping[str, str]):
        self.vending = vending
        self.config = S3Config.from_options(storage_options)

    def vend(self, table_path: str, session_name: str) -> tuple[dict[str, str], int]:
        """(token options, expiry in epoch millis) for the table at ``table_path``."""
        botocore_session = require("botocore.session", "credential vending (data tokens from STS)", extra="s3")
        bucket, prefix = split_s3_path(table_path)
        kwargs: dict[str, Any] = {"region_name": self.config.region or "us-east-1"}
        if self.vending.sts_endpoint:
            kwargs["endpoint_url"] = self.vending.sts_endpoint
        if self.config.access_key_id is not None:
            kwargs.update(aws_access_key_id=self.config.access_key_id,
                          aws_secret_access_key=self.config.secret_access_key,
                          aws_session_token=self.config.session_token)
        sts = botocore_session.get_session().create_client("sts", **kwargs)
        answer = sts.assume_role(RoleArn=self.vending.role_arn, RoleSessionName=session_name[:64],
                                 Policy=session_policy(bucket, prefix), DurationSeconds=self.vending.duration_seconds)
        credentials = answer["Credentials"]
        token = {ACCESS_KEY_OPTION: credentials["AccessKeyId"], SECRET_KEY_OPTION: credentials["SecretAccessKey"],
                 SESSION_TOKEN_OPTION: credentials["SessionToken"]}
        # where the store is (not secret): a client with no storage options of its own still reaches it
        if self.config.endpoint_url:
            token[ENDPOINT_OPTION] = self.config.endpoint_url
        if self.config.region:
            token[REGION_OPTION] = self.config.region
        return token, int(credentials["Expiration"].timestamp() * 1000)
