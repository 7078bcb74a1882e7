// Package dynamotest gives tests a real DynamoDB API: moto server (PyPI moto[server]). A test
// binary uses the server named by SHARDWISE_MOTO_ENDPOINT when it is set, and otherwise starts
// its own, once, from a Python venv it keeps under <module root>/.cache/moto-venv. A binary that
// may start one runs its tests through Main, which stops the server when they end:
//
//	func TestMain(m *testing.M) { dynamotest.Main(m) }
//
// When moto can be neither found nor installed, Endpoint fails the test: these tests never skip.
// The venv layout (bin/) and the install lock assume a Unix system.
package dynamotest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardwise/shardwise/shared/state"
)

const (
	// EndpointEnv names a running moto server (http://host:port) for the tests to use instead of
	// starting one; .ci/run and scripts/moto.sh set it.
	EndpointEnv = "SHARDWISE_MOTO_ENDPOINT"
	// MotoRequirement is what pip installs into the venv. It is the pin of
	// scripts/python-requirements.txt, so the tests run the moto that CI runs.
	MotoRequirement = "moto[server]==5.2.5"
	// Region is the region of Client; moto keeps separate state per region.
	Region = "us-east-1"

	// venvDir is the venv's place under the module root; .cache/ is git-ignored.
	venvDir = ".cache/moto-venv"
	// installedMarker records, inside the venv, the requirement that was fully installed, so an
	// install interrupted halfway is redone rather than trusted.
	installedMarker = ".shardwise-installed"
	// installTimeout bounds creating the venv and pip installing moto and its dependencies
	// (about 40 packages, a minute on a slow link).
	installTimeout = 10 * time.Minute
	// startTimeout bounds moto's start: it imports every AWS service model, a few seconds here.
	startTimeout = 60 * time.Second
	// pollInterval spaces readiness probes; a start takes seconds, so 100 ms costs nothing.
	pollInterval = 100 * time.Millisecond
	// stopTimeout bounds the wait for a killed moto to be reaped.
	stopTimeout = 10 * time.Second
)

var (
	mainRunning atomic.Bool

	startOnce sync.Once
	server    *motoServer
	startErr  error
)

// motoServer is a moto_server process this binary started.
type motoServer struct {
	endpoint string
	cmd      *exec.Cmd
	cancel   context.CancelFunc // kills the process
	logPath  string
	exited   chan struct{} // closed once the process has been reaped
}

// Main runs the tests of m and then stops the moto server Endpoint started, if any. Call it from
// TestMain.
func Main(m *testing.M) {
	mainRunning.Store(true)
	code := m.Run()
	if err := stop(); err != nil {
		fmt.Fprintf(os.Stderr, "dynamotest: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// Endpoint returns the URL of a moto server: SHARDWISE_MOTO_ENDPOINT when set, else one this test
// binary starts on a free port of 127.0.0.1 at the first call (installing moto first if needed).
// It fails t when there is no server to give.
func Endpoint(t testing.TB) string {
	t.Helper()
	if ep := os.Getenv(EndpointEnv); ep != "" {
		return ep
	}
	if !mainRunning.Load() {
		t.Fatalf("dynamotest: %s is unset, and the moto server this test would start could not be stopped: "+
			"add func TestMain(m *testing.M) { dynamotest.Main(m) } to the package's tests", EndpointEnv)
	}
	startOnce.Do(func() {
		// Another process can bind the free port before moto does (see freePort); moto then
		// exits at once, and a start on a new port follows.
		for range startAttempts {
			if server, startErr = start(t); !errors.Is(startErr, errPortTaken) {
				return
			}
			t.Logf("dynamotest: %v; starting again on a new port", startErr)
		}
	})
	if startErr != nil {
		t.Fatalf("dynamotest: no moto server (%s is unset, so the tests start their own): %v", EndpointEnv, startErr)
	}
	return server.endpoint
}

// Client returns a DynamoDB client for the server at endpoint, with dummy static credentials (moto
// checks none), region us-east-1 and shardwise's retry settings. The client has one request at a
// time in flight (see serialHTTP). opts run after those settings, so a test can wrap the HTTP client.
func Client(t testing.TB, endpoint string, opts ...func(*dynamodb.Options)) *dynamodb.Client {
	t.Helper()
	if u, err := url.Parse(endpoint); err != nil || u.Scheme == "" || u.Host == "" {
		t.Fatalf("dynamotest: endpoint %q is not an absolute URL like http://127.0.0.1:5055 (err %v)", endpoint, err)
	}
	return dynamodb.New(dynamodb.Options{
		Region:       Region,
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("testing", "testing", ""),
		HTTPClient:   &serialHTTP{next: awshttp.NewBuildableClient()},
	}, append([]func(*dynamodb.Options){state.WithDynamoRetry, logRetries}, opts...)...)
}

// logRetries makes the client say on stderr why it retries a call, which go test shows with a
// failing package's output: a retried write explains a version one higher than expected.
func logRetries(o *dynamodb.Options) {
	o.Retryer = &loggingRetryer{RetryerV2: o.Retryer.(aws.RetryerV2)}
}

type loggingRetryer struct{ aws.RetryerV2 }

func (r *loggingRetryer) IsErrorRetryable(err error) bool {
	retryable := r.RetryerV2.IsErrorRetryable(err)
	if retryable {
		fmt.Fprintf(os.Stderr, "dynamotest: %s: the SDK retries after: %v\n", time.Now().Format(time.StampMilli), err)
	}
	return retryable
}

// serialHTTP sends one request at a time. moto (5.2.5) evaluates a ConditionExpression and then
// writes without a lock, and its server runs each request on its own thread, so two concurrent
// conditional writes to one item can both succeed (seen: two winners of 20 racing IfAbsent
// claims, about one run in 40). DynamoDB orders the writes to an item one after another; sending
// them one at a time gives moto such an order. Store calls still interleave request by request,
// so a store that checks in one request and writes in another still loses its races.
type serialHTTP struct {
	mu   sync.Mutex
	next dynamodb.HTTPClient
}

// Do sends req once no other request is in flight. moto answers only after it has processed a
// request, so holding the lock until the response headers arrive is enough.
func (c *serialHTTP) Do(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.next.Do(req)
}

// NewTable creates a state table with a unique name through client and deletes it when t ends,
// so every test starts empty even on a shared server.
func NewTable(t testing.TB, client *dynamodb.Client) string {
	t.Helper()
	// DynamoDB table names allow [a-zA-Z0-9_.-]; rand.Text is base32, which fits.
	name := "shardwise-test-" + strings.ToLower(rand.Text())
	if err := CreateTable(t.Context(), client, name); err != nil {
		t.Fatalf("dynamotest: %v", err)
	}
	t.Cleanup(func() {
		// t.Context is already canceled when cleanups run.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		// Not found: a retried DeleteTable whose first attempt landed; the table is gone either way.
		if _, gone := errors.AsType[*types.ResourceNotFoundException](err); err != nil && !gone {
			t.Errorf("dynamotest: delete table %s: %v", name, err)
		}
	})
	return name
}

// start installs moto if needed and starts it, logging its version and start time to t.
func start(t testing.TB) (*motoServer, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	// The project's tool venv (scripts/venv.sh, used by make and .ci/run) holds the same pinned
	// moto; reuse it rather than installing a second copy.
	bin := filepath.Join(root, ".cache", "venv", "bin")
	if _, serr := os.Stat(filepath.Join(bin, "moto_server")); serr != nil {
		if bin, err = ensureVenv(t, filepath.Join(root, venvDir)); err != nil {
			return nil, err
		}
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	// The log sits beside the venv in git-ignored .cache/ while the server runs.
	logFile, err := os.CreateTemp(filepath.Join(root, ".cache"), "moto-*.log")
	if err != nil {
		return nil, fmt.Errorf("moto log file: %w", err)
	}
	// The server outlives every test, so only stop cancels this context, which kills moto.
	ctx, cancel := context.WithCancel(context.Background())
	s := &motoServer{
		endpoint: "http://127.0.0.1:" + strconv.Itoa(port),
		cmd:      exec.CommandContext(ctx, filepath.Join(bin, "moto_server"), "-H", "127.0.0.1", "-p", strconv.Itoa(port)),
		cancel:   cancel,
		logPath:  logFile.Name(),
		exited:   make(chan struct{}),
	}
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	s.cmd.SysProcAttr = sysProcAttr()
	began := time.Now()
	started := make(chan error, 1)
	go func() {
		// A parent-death signal follows the thread that started the child (see sysProcAttr), so
		// that thread stays locked to this goroutine until moto is gone.
		runtime.LockOSThread()
		if err := s.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = s.cmd.Wait() // moto exits only when killed, so its exit status says nothing
		close(s.exited)
	}()
	startErr := <-started
	closeErr := logFile.Close() // the child holds its own descriptor
	if startErr != nil {
		cancel()
		return nil, errors.Join(fmt.Errorf("start %s: %w", s.cmd.Path, startErr), closeErr, os.Remove(s.logPath))
	}
	if closeErr != nil {
		return nil, errors.Join(fmt.Errorf("moto log file: %w", closeErr), s.stop())
	}
	if err := s.waitReady(); err != nil {
		return nil, errors.Join(err, s.stop())
	}
	t.Logf("dynamotest: moto %s answering at %s, started in %s", motoVersion(bin), s.endpoint, time.Since(began).Round(time.Millisecond))
	return s, nil
}

// waitReady polls moto until it answers HTTP, it exits, or startTimeout passes.
func (s *motoServer) waitReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	// Any HTTP answer means the server is up; /moto-api/ is moto's own dashboard.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.endpoint+"/moto-api/", nil)
	if err != nil {
		return fmt.Errorf("probe moto: %w", err)
	}
	probe := &http.Client{Timeout: time.Second}
	for {
		if resp, err := probe.Do(req); err == nil {
			if err := resp.Body.Close(); err != nil {
				return fmt.Errorf("probe moto: %w", err)
			}
			return nil
		}
		select {
		case <-s.exited:
			log := s.logTail()
			if strings.Contains(strings.ToLower(log), "address already in use") {
				return fmt.Errorf("moto exited during start (%w); its log:\n%s", errPortTaken, log)
			}
			return fmt.Errorf("moto exited during start; its log:\n%s", log)
		case <-ctx.Done():
			return fmt.Errorf("moto did not answer at %s within %s; its log:\n%s", s.endpoint, startTimeout, s.logTail())
		case <-time.After(pollInterval):
		}
	}
}

// stop kills the server and removes its log.
func (s *motoServer) stop() error {
	s.cancel()
	select {
	case <-s.exited:
	case <-time.After(stopTimeout):
		return fmt.Errorf("moto (pid %d) still running %s after kill", s.cmd.Process.Pid, stopTimeout)
	}
	if err := os.Remove(s.logPath); err != nil {
		return fmt.Errorf("remove moto log: %w", err)
	}
	return nil
}

// logTail is the end of the server's log, enough for a failed start's traceback.
func (s *motoServer) logTail() string {
	const tail = 4 << 10
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return fmt.Sprintf("(unreadable: %v)", err)
	}
	if len(b) > tail {
		b = b[len(b)-tail:]
	}
	return string(b)
}

func stop() error {
	if server == nil {
		return nil
	}
	return server.stop()
}

// moduleRoot is the nearest directory at or above the working directory (a test's package
// directory) holding go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find module root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find module root: no go.mod at or above the working directory")
		}
		dir = parent
	}
}

// ensureVenv returns the bin directory of a venv at dir holding MotoRequirement, creating the
// venv and installing moto when needed. Test binaries of several packages run at once, so the
// install holds a file lock and checks again once it has it.
func ensureVenv(t testing.TB, dir string) (bin string, err error) {
	bin = filepath.Join(dir, "bin")
	if installed(dir) {
		return bin, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", filepath.Dir(dir), err)
	}
	lock, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("open venv lock: %w", err)
	}
	defer func() {
		// Closing releases the lock.
		if closeErr := lock.Close(); closeErr != nil && err == nil {
			err = fmt.Errorf("unlock %s: %w", lock.Name(), closeErr)
		}
	}()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	if installed(dir) {
		return bin, nil
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		return "", fmt.Errorf("moto is not installed at %s and python3 is not on PATH to install it: "+
			"install Python 3 with venv and pip, or set %s to a running moto server: %w", dir, EndpointEnv, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
	defer cancel()
	began := time.Now()
	t.Logf("dynamotest: installing %s into %s", MotoRequirement, dir)
	steps := [][]string{
		{python, "-m", "venv", dir},
		{filepath.Join(bin, "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", MotoRequirement},
	}
	for _, argv := range steps {
		if out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput(); err != nil {
			return "", fmt.Errorf("install moto: %s: %w\n%s", strings.Join(argv, " "), err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, installedMarker), []byte(MotoRequirement), 0o644); err != nil {
		return "", fmt.Errorf("install moto: %w", err)
	}
	t.Logf("dynamotest: installed %s in %s", MotoRequirement, time.Since(began).Round(time.Second))
	return bin, nil
}

// installed reports whether the venv at dir holds a complete install of MotoRequirement.
func installed(dir string) bool {
	marker, err := os.ReadFile(filepath.Join(dir, installedMarker))
	if err != nil || string(marker) != MotoRequirement {
		return false
	}
	_, err = os.Stat(filepath.Join(dir, "bin", "moto_server"))
	return err == nil
}

// startAttempts bounds the starts of moto that lose their port to another process.
const startAttempts = 5

// errPortTaken marks a moto that exited because another process had bound its port.
var errPortTaken = errors.New("another process took moto's port")

// freePort asks the kernel for a free TCP port on 127.0.0.1. Another process could take it
// before moto binds it; moto then exits at once, start returns errPortTaken, and Endpoint
// starts moto again on a new port.
func freePort() (int, error) {
	l, err := new(net.ListenConfig).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	return port, nil
}

// motoVersion asks the venv's Python which moto it has, for the log.
func motoVersion(bin string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "python"), "-c", "import importlib.metadata as m; print(m.version('moto'))")
	cmd.Stderr = io.Discard
	out, err := cmd.Output()
	if err != nil {
		return fmt.Sprintf("(version unknown: %v)", err)
	}
	return strings.TrimSpace(string(out))
}

// TableAPI is the part of *dynamodb.Client that CreateTable uses.
type TableAPI interface {
	dynamodb.DescribeTableAPIClient
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

// tableActiveTimeout bounds CreateTable's wait for ACTIVE; an on-demand table is usually active
// within seconds (moto: at once).
const tableActiveTimeout = 5 * time.Minute

// CreateTable creates a state table as the deployed template declares it (on-demand, pk/sk string keys, TTL on expires_at) and
// waits until it is active. It is idempotent: an existing table with the same key schema is
// kept, and its TTL enabled if it is not; one with another key schema is an error.
func CreateTable(ctx context.Context, client TableAPI, table string) error {
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   aws.String(table),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(state.AttrPartitionKey), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(state.AttrSortKey), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: tableKeySchema(),
	})
	if _, exists := errors.AsType[*types.ResourceInUseException](err); err != nil && !exists {
		return fmt.Errorf("create table %s: %w", table, err)
	}
	desc, err := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = time.Second // the default 20 s is sized for provisioned tables
	}).WaitForOutput(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, tableActiveTimeout)
	if err != nil {
		return fmt.Errorf("create table %s: wait for active: %w", table, err)
	}
	if !sameKeySchema(desc.Table.KeySchema, tableKeySchema()) {
		return fmt.Errorf("create table %s: exists with key schema %s, want %s",
			table, formatKeySchema(desc.Table.KeySchema), formatKeySchema(tableKeySchema()))
	}
	ttl, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil {
		return fmt.Errorf("create table %s: describe ttl: %w", table, err)
	}
	if d := ttl.TimeToLiveDescription; d != nil && d.AttributeName != nil {
		switch d.TimeToLiveStatus {
		case types.TimeToLiveStatusEnabled, types.TimeToLiveStatusEnabling:
			if *d.AttributeName != state.AttrExpires {
				return fmt.Errorf("create table %s: ttl is on %q, want %q", table, *d.AttributeName, state.AttrExpires)
			}
			return nil
		}
	}
	// DynamoDB refuses to enable TTL twice, hence the describe first.
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(state.AttrExpires), Enabled: aws.Bool(true)},
	})
	if err != nil {
		return fmt.Errorf("create table %s: enable ttl: %w", table, err)
	}
	return nil
}

func tableKeySchema() []types.KeySchemaElement {
	return []types.KeySchemaElement{
		{AttributeName: aws.String(state.AttrPartitionKey), KeyType: types.KeyTypeHash},
		{AttributeName: aws.String(state.AttrSortKey), KeyType: types.KeyTypeRange},
	}
}

func sameKeySchema(a, b []types.KeySchemaElement) bool {
	return slices.EqualFunc(a, b, func(x, y types.KeySchemaElement) bool {
		return aws.ToString(x.AttributeName) == aws.ToString(y.AttributeName) && x.KeyType == y.KeyType
	})
}

func formatKeySchema(ks []types.KeySchemaElement) string {
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = aws.ToString(k.AttributeName) + " " + string(k.KeyType)
	}
	return fmt.Sprintf("%q", parts)
}
