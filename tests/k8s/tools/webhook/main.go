// Command webhook is a mutating admission webhook for syncd's tests: an
// HTTPS server on loopback that, for every object with a pod template it
// admits (a Deployment), injects what real webhooks inject:
//
//   - the annotation webhook.syncd.test/injected: "true"
//   - a sidecar container "proxy" (image proxy:1)
//   - tolerationSeconds: 300 into each NoExecute toleration that has
//     none (a default inside a value that is atomic for server-side
//     apply)
//   - when the object asks for it with the annotation
//     webhook.syncd.test/image: IMAGE, that image in its first container
//     (a webhook changing a declared value)
//
// It prints "listening on https://ADDR" once ready, then one line per
// review: "admit OPERATION NAMESPACE/NAME dryRun=BOOL".
//
//	webhook --listen 127.0.0.1:0 --cert FILE --key FILE
package main

import (
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
)

type review struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Request    *request        `json:"request,omitempty"`
	Response   *response       `json:"response,omitempty"`
	Raw        json.RawMessage `json:"-"`
}

type request struct {
	UID       string          `json:"uid"`
	Operation string          `json:"operation"`
	Name      string          `json:"name"`
	Namespace string          `json:"namespace"`
	DryRun    *bool           `json:"dryRun"`
	Object    json.RawMessage `json:"object"`
}

type response struct {
	UID       string `json:"uid"`
	Allowed   bool   `json:"allowed"`
	PatchType string `json:"patchType,omitempty"`
	Patch     []byte `json:"patch,omitempty"`
}

type op struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

const (
	injected = "webhook.syncd.test/injected"
	imageKey = "webhook.syncd.test/image"
)

func escape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// The JSON patch for one object (decoded as generic JSON).
func mutate(obj map[string]any) []op {
	var ops []op
	meta, _ := obj["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	if ann == nil {
		ops = append(ops, op{"add", "/metadata/annotations", map[string]any{injected: "true"}})
	} else if ann[injected] != "true" {
		ops = append(ops, op{"add", "/metadata/annotations/" + escape(injected), "true"})
	}
	spec, _ := obj["spec"].(map[string]any)
	tmpl, _ := spec["template"].(map[string]any)
	pod, _ := tmpl["spec"].(map[string]any)
	if pod == nil {
		return ops
	}
	containers, _ := pod["containers"].([]any)
	has := false
	for _, c := range containers {
		if m, _ := c.(map[string]any); m["name"] == "proxy" {
			has = true
		}
	}
	if !has {
		ops = append(ops, op{"add", "/spec/template/spec/containers/-",
			map[string]any{"name": "proxy", "image": "proxy:1"}})
	}
	if img, ok := ann[imageKey].(string); ok && len(containers) > 0 {
		ops = append(ops, op{"replace", "/spec/template/spec/containers/0/image", img})
	}
	tols, _ := pod["tolerations"].([]any)
	for i, t := range tols {
		m, _ := t.(map[string]any)
		if m["effect"] == "NoExecute" && m["tolerationSeconds"] == nil {
			ops = append(ops, op{"add",
				fmt.Sprintf("/spec/template/spec/tolerations/%d/tolerationSeconds", i), 300})
		}
	}
	return ops
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address")
	cert := flag.String("cert", "", "serving certificate (PEM)")
	key := flag.String("key", "", "its key (PEM)")
	flag.Parse()
	pair, err := tls.LoadX509KeyPair(*cert, *key)
	if err != nil {
		fmt.Fprintln(os.Stderr, "webhook:", err)
		os.Exit(1)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "webhook:", err)
		os.Exit(1)
	}
	var mu sync.Mutex
	http.HandleFunc("/mutate", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
		var rv review
		if err != nil || json.Unmarshal(body, &rv) != nil || rv.Request == nil {
			http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		var obj map[string]any
		resp := &response{UID: rv.Request.UID, Allowed: true}
		if json.Unmarshal(rv.Request.Object, &obj) == nil {
			if ops := mutate(obj); len(ops) > 0 {
				resp.PatchType = "JSONPatch"
				resp.Patch, _ = json.Marshal(ops)
			}
		}
		dry := rv.Request.DryRun != nil && *rv.Request.DryRun
		mu.Lock()
		fmt.Printf("admit %s %s/%s dryRun=%t\n", rv.Request.Operation,
			rv.Request.Namespace, rv.Request.Name, dry)
		mu.Unlock()
		out, _ := json.Marshal(review{APIVersion: rv.APIVersion, Kind: rv.Kind, Response: resp})
		w.Header().Set("Content-Type", "application/json")
		w.Write(out)
	})
	fmt.Printf("listening on https://%s\n", ln.Addr())
	os.Stdout.Sync()
	srv := &http.Server{TLSConfig: &tls.Config{Certificates: []tls.Certificate{pair}}}
	if err := srv.ServeTLS(ln, "", ""); err != nil {
		fmt.Fprintln(os.Stderr, "webhook:", err)
		os.Exit(1)
	}
}
