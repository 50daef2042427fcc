# boto3 doing everyday S3 and STS work against ENDPOINT with whatever credentials its environment
# holds (inside srt: sentinels). Prints one JSON line of results; a failed call raises.
import json
import os
import sys

import boto3
from boto3.s3.transfer import TransferConfig
from botocore.config import Config

endpoint, path, back = sys.argv[1:4]
s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
out = {}
s3.put_object(Bucket="bucket", Key="boto/small.txt", Body=b"hello from boto3\n")
# Managed transfers: multipart above the threshold, ranged downloads.
cfg = TransferConfig(multipart_threshold=5 * 1024 * 1024, multipart_chunksize=5 * 1024 * 1024)
s3.upload_file(path, "bucket", "boto/data.bin", Config=cfg)
s3.download_file("bucket", "boto/data.bin", back, Config=cfg)
out["small"] = s3.get_object(Bucket="bucket", Key="boto/small.txt")["Body"].read().decode()
out["keys"] = sorted(o["Key"] for o in s3.list_objects_v2(Bucket="bucket", Prefix="boto/").get("Contents", []))
# boto3 presigns S3 URLs with Signature Version 2 unless told otherwise; SigV4 is what AWS wants.
v4 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", config=Config(signature_version="s3v4"))
out["presigned"] = v4.generate_presigned_url("get_object", Params={"Bucket": "bucket", "Key": "boto/small.txt"}, ExpiresIn=300)
out["account"] = boto3.client("sts", endpoint_url=endpoint, region_name="us-east-1").get_caller_identity()["Account"]
out["boto3"] = boto3.__version__
out["held"] = [v for v in (os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")) if v]
print(json.dumps(out))
