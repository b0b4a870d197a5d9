// Package objstore is the object storage that checkpoints and savepoints
// may live in instead of a local directory: a path of the form
// s3://bucket/key names an object on an S3-compatible store.
//
// Store is the small contract the state and checkpoint packages need
// (whole-file upload and download, a conditional put for _metadata,
// listing and deleting by prefix); S3 implements it on aws-sdk-go-v2. The
// S3 client is process-wide, as Flink's filesystem configuration is
// cluster-wide: Configure sets its options (endpoint, region, credentials,
// path-style) once, and ForURL returns it for any s3:// path. Without
// Configure the client reads the usual AWS environment variables
// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION,
// AWS_ENDPOINT_URL_S3, ...).
package objstore
