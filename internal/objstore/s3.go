package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"golang.org/x/sync/errgroup"
)

// Options configure the S3 client (config keys s3.*, docs/semantics.md#checkpoints).
// Empty fields fall back to the AWS environment variables and files;
// the EC2 instance metadata service only with InstanceMetadata.
type Options struct {
	// Endpoint is the store's URL (http://127.0.0.1:9000 for a local
	// server); empty for AWS itself (or AWS_ENDPOINT_URL_S3).
	Endpoint string
	// Region; empty: AWS_REGION, else us-east-1.
	Region string
	// AccessKey and SecretKey are static credentials; empty: the SDK's
	// default chain (AWS_ACCESS_KEY_ID, ~/.aws, ...).
	AccessKey, SecretKey string
	// PathStyle addresses buckets as endpoint/bucket/key rather than
	// bucket.endpoint/key (most S3-compatible servers need it).
	PathStyle bool
	// InstanceMetadata lets the SDK ask the EC2 instance metadata service
	// for credentials and the region when nothing else gives them. Off,
	// the client never calls it: the instance's role is the server's, and
	// a job must not borrow it unless the runtime is set up to.
	InstanceMetadata bool
	// Concurrency bounds the requests in flight (uploads of files and of
	// parts). Default 8.
	Concurrency int
	// PartSize is the size of multipart upload parts; files larger than it
	// go up in parts. Default 16 MiB, at least 5 MiB (S3's minimum).
	PartSize int64
}

const (
	// responseHeaderTimeout bounds the wait for a response once a request
	// is sent (uploads of a part included; S3 answers after the body).
	responseHeaderTimeout = 2 * time.Minute
	defaultConcurrency    = 8
	defaultPartSize       = 16 << 20
	minPartSize           = 5 << 20
)

// S3 is a Store on an S3-compatible API.
type S3 struct {
	client   *s3.Client
	sem      chan struct{} // bounds the requests in flight
	partSize int64
	endpoint string // for error messages
}

var _ Store = (*S3)(nil)

// NewS3 returns a client for o.
func NewS3(ctx context.Context, o Options) (*S3, error) {
	var loads []func(*awsconfig.LoadOptions) error
	region := o.Region
	if region == "" && os.Getenv("AWS_REGION") == "" && os.Getenv("AWS_DEFAULT_REGION") == "" {
		region = "us-east-1"
	}
	if region != "" {
		loads = append(loads, awsconfig.WithRegion(region))
	}
	if o.AccessKey != "" || o.SecretKey != "" {
		if o.AccessKey == "" || o.SecretKey == "" {
			return nil, errors.New("objstore: s3.access-key and s3.secret-key go together: set both or neither")
		}
		loads = append(loads, awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(o.AccessKey, o.SecretKey, "")))
	}
	if !o.InstanceMetadata {
		loads = append(loads, awsconfig.WithEC2IMDSClientEnableState(imds.ClientDisabled))
	}
	// A store that accepts a connection but never answers must fail the
	// request, not hang the checkpoint: the SDK's transport has no
	// response timeout of its own.
	loads = append(loads, awsconfig.WithHTTPClient(awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		tr.ResponseHeaderTimeout = responseHeaderTimeout
	})))
	cfg, err := awsconfig.LoadDefaultConfig(ctx, loads...)
	if err != nil {
		return nil, fmt.Errorf("objstore: loading the AWS configuration: %w", err)
	}
	// Checksums only where the API requires them: S3-compatible servers
	// do not all know the newer checksum headers.
	cfg.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
	cfg.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	client := s3.NewFromConfig(cfg, func(so *s3.Options) {
		if o.Endpoint != "" {
			so.BaseEndpoint = aws.String(o.Endpoint)
		}
		so.UsePathStyle = o.PathStyle
	})
	conc := o.Concurrency
	if conc <= 0 {
		conc = defaultConcurrency
	}
	part := o.PartSize
	if part <= 0 {
		part = defaultPartSize
	}
	part = max(part, minPartSize)
	ep := o.Endpoint
	if ep == "" {
		ep = "AWS S3"
	}
	return &S3{client: client, sem: make(chan struct{}, conc), partSize: part, endpoint: ep}, nil
}

// Concurrency is the number of requests the client runs at once.
func (s *S3) Concurrency() int { return cap(s.sem) }

func (s *S3) acquire(ctx context.Context) error {
	select {
	case s.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (s *S3) release() { <-s.sem }

// wrap names the operation, URL and store in err and maps a missing
// object to ErrNotExist and a failed precondition to ErrExists.
func (s *S3) wrap(op, url string, err error) error {
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	if errors.As(err, &nsk) || errors.As(err, &nf) {
		return fmt.Errorf("objstore: %s %s: %w", op, url, ErrNotExist)
	}
	var ae smithy.APIError
	if errors.As(err, &ae) && (ae.ErrorCode() == "PreconditionFailed" || ae.ErrorCode() == "ConditionalRequestConflict") {
		return fmt.Errorf("objstore: %s %s: %w", op, url, ErrExists)
	}
	if strings.Contains(err.Error(), "failed to refresh cached credentials") { // the SDK has no type for it
		return fmt.Errorf("objstore: %s %s on %s: no S3 credentials: set s3.access-key and s3.secret-key, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "+
			"or a profile in the shared AWS files (on EC2, s3.credentials.instance-metadata=true takes the instance's role): %w", op, url, s.endpoint, err)
	}
	return fmt.Errorf("objstore: %s %s on %s: %w", op, url, s.endpoint, err)
}

// Upload implements Store.
func (s *S3) Upload(ctx context.Context, url, src string) error {
	bucket, key, err := Split(url)
	if err != nil {
		return err
	}
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() > s.partSize {
		return s.uploadParts(ctx, bucket, key, url, f, fi.Size())
	}
	if err := s.acquire(ctx); err != nil {
		return err
	}
	defer s.release()
	_, err = s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: &bucket, Key: &key, Body: f, ContentLength: aws.Int64(fi.Size()),
	})
	if err != nil {
		return s.wrap("upload to", url, err)
	}
	return nil
}

// uploadParts uploads f as a multipart upload, its parts in parallel
// within the client's bound; a failure aborts the upload so that no
// parts linger.
func (s *S3) uploadParts(ctx context.Context, bucket, key, url string, f *os.File, size int64) (err error) {
	created, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: &key})
	if err != nil {
		return s.wrap("start multipart upload to", url, err)
	}
	defer func() {
		if err != nil {
			// A fresh context: the upload's may be canceled already.
			_, _ = s.client.AbortMultipartUpload(context.WithoutCancel(ctx), &s3.AbortMultipartUploadInput{
				Bucket: &bucket, Key: &key, UploadId: created.UploadId,
			})
		}
	}()
	n := int((size + s.partSize - 1) / s.partSize)
	parts := make([]types.CompletedPart, n)
	g, gctx := errgroup.WithContext(ctx)
	for i := range n {
		if err := s.acquire(gctx); err != nil {
			break // g.Wait reports the failure that canceled gctx
		}
		g.Go(func() error {
			defer s.release()
			off := int64(i) * s.partSize
			length := min(s.partSize, size-off)
			num := int32(i + 1)
			out, err := s.client.UploadPart(gctx, &s3.UploadPartInput{
				Bucket: &bucket, Key: &key, UploadId: created.UploadId, PartNumber: &num,
				Body: io.NewSectionReader(f, off, length), ContentLength: aws.Int64(length),
			})
			if err != nil {
				return s.wrap(fmt.Sprintf("upload part %d of", num), url, err)
			}
			parts[i] = types.CompletedPart{ETag: out.ETag, PartNumber: &num}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if err := context.Cause(ctx); err != nil {
		return err
	}
	_, err = s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: &bucket, Key: &key, UploadId: created.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	})
	if err != nil {
		return s.wrap("complete multipart upload to", url, err)
	}
	return nil
}

// PutIfAbsent implements Store with If-None-Match: *. A store that does
// not implement conditional puts (501 NotImplemented) gets a check for
// the object followed by a plain put: atomic enough for _metadata, which
// one coordinator writes under a fresh name.
func (s *S3) PutIfAbsent(ctx context.Context, url string, data []byte) error {
	bucket, key, err := Split(url)
	if err != nil {
		return err
	}
	if err := s.acquire(ctx); err != nil {
		return err
	}
	defer s.release()
	_, err = s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: &bucket, Key: &key, Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))),
		IfNoneMatch: aws.String("*"),
	})
	var ae smithy.APIError
	if err != nil && errors.As(err, &ae) && ae.ErrorCode() == "NotImplemented" {
		if _, herr := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: &key}); herr == nil {
			return fmt.Errorf("objstore: put %s: %w", url, ErrExists)
		}
		_, err = s.client.PutObject(ctx, &s3.PutObjectInput{
			Bucket: &bucket, Key: &key, Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))),
		})
	}
	if err != nil {
		return s.wrap("put", url, err)
	}
	return nil
}

// Download implements Store.
func (s *S3) Download(ctx context.Context, url, dst string) (err error) {
	bucket, key, err := Split(url)
	if err != nil {
		return err
	}
	if err := s.acquire(ctx); err != nil {
		return err
	}
	defer s.release()
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		return s.wrap("download", url, err)
	}
	defer out.Body.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".download-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err := io.Copy(tmp, out.Body); err != nil {
		return s.wrap("download", url, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

// Read implements Store.
func (s *S3) Read(ctx context.Context, url string) ([]byte, error) {
	bucket, key, err := Split(url)
	if err != nil {
		return nil, err
	}
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	defer s.release()
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		return nil, s.wrap("read", url, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, s.wrap("read", url, err)
	}
	return data, nil
}

// Size implements Store.
func (s *S3) Size(ctx context.Context, url string) (int64, error) {
	bucket, key, err := Split(url)
	if err != nil {
		return 0, err
	}
	if err := s.acquire(ctx); err != nil {
		return 0, err
	}
	defer s.release()
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		var re interface{ HTTPStatusCode() int }
		if errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound {
			return 0, fmt.Errorf("objstore: %s: %w", url, ErrNotExist)
		}
		return 0, s.wrap("stat", url, err)
	}
	return aws.ToInt64(out.ContentLength), nil
}

// List implements Store.
func (s *S3) List(ctx context.Context, prefix string) ([]Object, error) {
	bucket, key, err := Split(prefix)
	if err != nil {
		return nil, err
	}
	var objs []Object
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &key})
	for p.HasMorePages() {
		if err := s.acquire(ctx); err != nil {
			return nil, err
		}
		page, err := p.NextPage(ctx)
		s.release()
		if err != nil {
			return nil, s.wrap("list", prefix, err)
		}
		for _, o := range page.Contents {
			objs = append(objs, Object{URL: Scheme + bucket + "/" + aws.ToString(o.Key), Size: aws.ToInt64(o.Size)})
		}
	}
	return objs, nil
}

// Delete implements Store, up to 1000 keys a request.
func (s *S3) Delete(ctx context.Context, urls []string) error {
	byBucket := map[string][]types.ObjectIdentifier{}
	for _, u := range urls {
		bucket, key, err := Split(u)
		if err != nil {
			return err
		}
		byBucket[bucket] = append(byBucket[bucket], types.ObjectIdentifier{Key: aws.String(key)})
	}
	var errs []error
	for bucket, ids := range byBucket {
		for len(ids) > 0 {
			batch := ids[:min(len(ids), 1000)]
			ids = ids[len(batch):]
			if err := s.acquire(ctx); err != nil {
				return err
			}
			out, err := s.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{
				Bucket: &bucket, Delete: &types.Delete{Objects: batch, Quiet: aws.Bool(true)},
			})
			s.release()
			if err != nil {
				errs = append(errs, s.wrap("delete from", Scheme+bucket, err))
				continue
			}
			for _, e := range out.Errors {
				errs = append(errs, fmt.Errorf("objstore: delete %s%s/%s: %s", Scheme, bucket, aws.ToString(e.Key), aws.ToString(e.Message)))
			}
		}
	}
	return errors.Join(errs...)
}

// The process-wide client (see the package doc).
var shared struct {
	sync.Mutex
	opts       Options
	configured bool
	client     *S3
}

// Configure sets the options of the process-wide S3 client. Configuring
// the same options again does nothing; other options than those of a
// client already in use are an error, since every job of the process
// shares the client (as a Flink cluster shares its filesystem
// configuration).
func Configure(o Options) error {
	shared.Lock()
	defer shared.Unlock()
	if shared.configured && shared.opts == o {
		return nil
	}
	if shared.client != nil {
		return fmt.Errorf("objstore: the s3.* options are the runtime's, shared by its jobs, and a job already uses others "+
			"(endpoint %q, region %q, path-style %v): give every job the same s3.* settings, or run another runtime",
			shared.opts.Endpoint, shared.opts.Region, shared.opts.PathStyle)
	}
	shared.opts, shared.configured = o, true
	return nil
}

// ForURL returns the process-wide client for an s3:// url.
func ForURL(url string) (Store, error) {
	if _, _, err := Split(url); err != nil {
		return nil, err
	}
	shared.Lock()
	defer shared.Unlock()
	if shared.client == nil {
		c, err := NewS3(context.Background(), shared.opts)
		if err != nil {
			return nil, err
		}
		shared.client = c
	}
	return shared.client, nil
}

// ResetForTests drops the process-wide client and its options.
func ResetForTests() {
	shared.Lock()
	defer shared.Unlock()
	shared.opts, shared.configured, shared.client = Options{}, false, nil
}

// CreateBucket creates a bucket (for tests and set-up scripts; the
// runtime never creates buckets). An existing bucket of the caller's is
// not an error.
func (s *S3) CreateBucket(ctx context.Context, bucket string) error {
	_, err := s.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket})
	var owned *types.BucketAlreadyOwnedByYou
	if err != nil && !errors.As(err, &owned) {
		return s.wrap("create bucket", Scheme+bucket, err)
	}
	return nil
}
