package webhook

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/aws/aws-lambda-go/events"
)

// Errors Receive returns, each wrapped with what exactly was wrong. Status maps them to HTTP.
var (
	// ErrMalformed: the body is not the JSON document its path takes (400).
	ErrMalformed = errors.New("malformed body")
	// ErrContentType: the body is not declared application/json in UTF-8 (400, as issue 3 asks).
	ErrContentType = errors.New("unsupported content type")
	// ErrNoCluster: nothing in the request names a cluster (400).
	ErrNoCluster = errors.New("no cluster named")
	// ErrUnauthenticated: neither SigV4 (the AWS_IAM Function URL) nor a valid, fresh HMAC
	// signature (401).
	ErrUnauthenticated = errors.New("not authenticated")
	// ErrNoRoute: no webhook at this path (404).
	ErrNoRoute = errors.New("no such webhook")
	// ErrUnknownCluster: the cluster named is not in the configuration (404).
	ErrUnknownCluster = errors.New("unknown cluster")
	// ErrMethod: only POST is served (405).
	ErrMethod = errors.New("method not allowed")
	// ErrTooLarge: the body is over MaxBodyBytes (413).
	ErrTooLarge = errors.New("body too large")
	// ErrSecretUnavailable: the HMAC secret could not be read, so no signature can be checked (503).
	ErrSecretUnavailable = errors.New("webhook secret unavailable")
)

// problems gives each error its status and the code in the JSON error body, in one place.
var problems = []struct {
	err    error
	status int
	code   string
}{
	{ErrMalformed, http.StatusBadRequest, "malformed_body"},
	{ErrContentType, http.StatusBadRequest, "unsupported_content_type"},
	{ErrNoCluster, http.StatusBadRequest, "no_cluster"},
	{ErrUnauthenticated, http.StatusUnauthorized, "unauthenticated"},
	{ErrNoRoute, http.StatusNotFound, "no_such_webhook"},
	{ErrUnknownCluster, http.StatusNotFound, "unknown_cluster"},
	{ErrMethod, http.StatusMethodNotAllowed, "method_not_allowed"},
	{ErrTooLarge, http.StatusRequestEntityTooLarge, "body_too_large"},
	{ErrSecretUnavailable, http.StatusServiceUnavailable, "secret_unavailable"},
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
}

// ErrorResponse answers with status and a JSON ErrorBody.
func ErrorResponse(status int, code string, err error) events.LambdaFunctionURLResponse {
	r := JSONResponse(status, ErrorBody{Status: status, Code: code, Message: err.Error()})
	if status == http.StatusMethodNotAllowed {
		r.Headers["allow"] = http.MethodPost
	}
	return r
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
