// The AWS SDK for JavaScript v3 (@aws-sdk/client-s3, current version) doing everyday S3 work
// against ENDPOINT, with whatever credentials its environment holds (inside srt: sentinels).
// Prints one JSON line of results; a failed call exits 1 with the error.
import { createReadStream, readFileSync, statSync } from 'node:fs';
import {
  S3Client, PutObjectCommand, GetObjectCommand, ListObjectsV2Command,
  CreateMultipartUploadCommand, UploadPartCommand, CompleteMultipartUploadCommand,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';

const [endpoint, file] = process.argv.slice(2);
const s3 = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true });
const out = {};
const bytes = readFileSync(file);

// PutObject with the default checksums: a buffer body, then a stream (aws-chunked with a trailing checksum).
await s3.send(new PutObjectCommand({ Bucket: 'bucket', Key: 'sdk/small.txt', Body: 'hello from the sdk\n' }));
// A key S3 signs percent-encoded once (every other service would encode it twice).
await s3.send(new PutObjectCommand({ Bucket: 'bucket', Key: 'sdk/a b+c (é).txt', Body: 'odd key\n' }));
await s3.send(new PutObjectCommand({ Bucket: 'bucket', Key: 'sdk/stream.bin', Body: createReadStream(file), ContentLength: statSync(file).size }));

// Multipart upload: 5 MiB and the rest.
const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: 'bucket', Key: 'sdk/multi.bin' }));
const part1 = bytes.subarray(0, 5 * 1024 * 1024);
const part2 = bytes.subarray(5 * 1024 * 1024);
const p1 = await s3.send(new UploadPartCommand({ Bucket: 'bucket', Key: 'sdk/multi.bin', UploadId, PartNumber: 1, Body: part1 }));
const p2 = await s3.send(new UploadPartCommand({ Bucket: 'bucket', Key: 'sdk/multi.bin', UploadId, PartNumber: 2, Body: part2 }));
await s3.send(new CompleteMultipartUploadCommand({ Bucket: 'bucket', Key: 'sdk/multi.bin', UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: p1.ETag }, { PartNumber: 2, ETag: p2.ETag }] } }));

const got = await s3.send(new GetObjectCommand({ Bucket: 'bucket', Key: 'sdk/multi.bin' }));
out.multiEqual = Buffer.from(await got.Body.transformToByteArray()).equals(bytes);
const small = await s3.send(new GetObjectCommand({ Bucket: 'bucket', Key: 'sdk/small.txt' }));
out.small = await small.Body.transformToString();
const list = await s3.send(new ListObjectsV2Command({ Bucket: 'bucket', Prefix: 'sdk/' }));
out.keys = (list.Contents ?? []).map((c) => c.Key).sort();
out.presigned = await getSignedUrl(s3, new GetObjectCommand({ Bucket: 'bucket', Key: 'sdk/small.txt' }), { expiresIn: 300 });
out.held = [process.env.AWS_ACCESS_KEY_ID, process.env.AWS_SECRET_ACCESS_KEY, process.env.AWS_SESSION_TOKEN].filter(Boolean);
console.log(JSON.stringify(out));
