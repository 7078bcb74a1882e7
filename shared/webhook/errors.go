package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// Errors Receive returns, each wrapped with what exactly was wrong. Status maps them to HTTP.
var (
	// errMalformed: the body is not the JSON document its path takes (400).
	errMalformed = errors.New("malformed body")
	// errContentType: the body is not declared application/json in UTF-8 (400).
	errContentType = errors.New("unsupported content type")
	// errNoCluster: nothing in the request names a cluster (400).
	errNoCluster = errors.New("no cluster named")
	// errUnauthenticated: neither SigV4 (the AWS_IAM Function URL) nor a valid, fresh HMAC
	// signature (401).
	errUnauthenticated = errors.New("not authenticated")
	// errNoRoute: no webhook at this path (404).
	errNoRoute = errors.New("no such webhook")
	// ErrUnknownCluster: the cluster named is not in the configuration (404). Exported because an
	// alarm that reaches detect through the account's event bus may be another stack's.
	ErrUnknownCluster = errors.New("unknown cluster")
	// errMethod: only POST is served (405).
	errMethod = errors.New("method not allowed")
	// errTooLarge: the body is over MaxBodyBytes (413).
	errTooLarge = errors.New("body too large")
	// ErrSecretUnavailable: the HMAC secret could not be read, so no signature can be checked (503).
	ErrSecretUnavailable = errors.New("webhook secret unavailable")
	// errReplay: an HMAC-signed request already carried out, sent again (409).
	errReplay = errors.New("request replayed")
	// errReplayCheck: the signature could not be recorded, so a replay could not be ruled out (503).
	errReplayCheck = errors.New("replay check unavailable")
)

// errReceiverConfig marks a refusal caused by the receiver's configuration rather than by the
// request: its detail stays in the log.
var errReceiverConfig = errors.New("receiver configuration")

// problems gives each error its status and the code in the JSON error body, in one place.
var problems = []struct {
	err    error
	status int
	code   string
}{
	{errMalformed, http.StatusBadRequest, "malformed_body"},
	{errContentType, http.StatusBadRequest, "unsupported_content_type"},
	{errNoCluster, http.StatusBadRequest, "no_cluster"},
	{errUnauthenticated, http.StatusUnauthorized, "unauthenticated"},
	{errNoRoute, http.StatusNotFound, "no_such_webhook"},
	{ErrUnknownCluster, http.StatusNotFound, "unknown_cluster"},
	{errMethod, http.StatusMethodNotAllowed, "method_not_allowed"},
	{errTooLarge, http.StatusRequestEntityTooLarge, "body_too_large"},
	{ErrSecretUnavailable, http.StatusServiceUnavailable, "secret_unavailable"},
	{errReplay, http.StatusConflict, "replayed"},
	{errReplayCheck, http.StatusServiceUnavailable, "replay_check_unavailable"},
}

// Status returns the HTTP status and error code for an error of Receive; anything else is
// 500 "internal".
func Status(err error) (int, string) {
	for _, p := range problems {
		if errors.Is(err, p.err) {
			return p.status, p.code
		}
	}
	return http.StatusInternalServerError, "internal"
}

// ErrorBody is the JSON body of every error response.
type ErrorBody struct {
	Status int `json:"status"`
	// Code is stable and machine-readable ("malformed_body"); Message says what was wrong.
	Code    string `json:"error"`
	Message string `json:"message"`
	// RequestID finds the request's log lines, which hold what a generic Message leaves out.
	RequestID string `json:"request_id,omitempty"`
}

// ErrorResponse answers with status and a JSON ErrorBody. The message is err's for a refusal
// (4xx), which only ever says what was wrong with the request, and a generic one for a failure
// (5xx), whose error may hold what callers must not see (SSM or SDK messages, ARNs): the caller
// gets requestID and the log gets err.
func ErrorResponse(status int, code string, err error, requestID string) events.LambdaFunctionURLResponse {
	r := JSONResponse(status, ErrorBody{Status: status, Code: code, Message: PublicMessage(status, err, requestID), RequestID: requestID})
	if status == http.StatusMethodNotAllowed {
		r.Headers["allow"] = http.MethodPost
	}
	return r
}

// PublicMessage is what a caller is told about err, answered with status: err itself for a 4xx
// (a 401 caused by the receiver's configuration says only how to authenticate), else only the
// status and the request id to quote.
func PublicMessage(status int, err error, requestID string) string {
	if status == http.StatusUnauthorized && errors.Is(err, errReceiverConfig) {
		// An unauthenticated caller learns what was wrong with its request and how to
		// authenticate, never how this receiver is configured (which secret variables are
		// unset, whether a replay guard is wired).
		return fmt.Sprintf("not authenticated: sign the request with SigV4 through the AWS_IAM URL, or with the %s and %s headers; the log of request %s says why",
			HeaderTimestamp, HeaderSignature, requestID)
	}
	if status < http.StatusInternalServerError {
		return err.Error()
	}
	return fmt.Sprintf("%s; the log of request %s says why", strings.ToLower(http.StatusText(status)), requestID)
}

// JSONResponse answers with status and v as JSON.
func JSONResponse(status int, v any) events.LambdaFunctionURLResponse {
	b, err := json.Marshal(v)
	if err != nil {
		// Only a programming error gets here (a value JSON cannot encode); the caller still gets
		// a JSON answer.
		status = http.StatusInternalServerError
		b, _ = json.Marshal(ErrorBody{Status: status, Code: "internal", Message: "encode response: " + err.Error()})
	}
	return events.LambdaFunctionURLResponse{
		StatusCode: status,
		Headers:    map[string]string{"content-type": "application/json"},
		Body:       string(b),
	}
}
