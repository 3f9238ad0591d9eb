// Command gen writes diff/gogotypes_gen.c: the Go types of the
// built-in kinds kube-emu serves, as kube-apiserver 1.36 decodes and
// encodes them (every JSON field, omitempty and omitzero, pointers), with
// the structured-merge-diff relationships its field manager uses (the
// OpenAPI extensions x-kubernetes-list-type, -list-map-keys, -map-type and
// the patch-strategy fallback of kube-openapi's schemaconv) and the
// OpenAPI defaults of fields.
//
//	cd diff/gen && GOFLAGS=-mod=mod GOPROXY=off go run . >../gotypes_gen.c
//
// A test tool: kube-emu builds from the generated C file without Go.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	aeopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggopenapi "k8s.io/kube-aggregator/pkg/generated/openapi"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
	k8sopenapi "k8s.io/kubernetes/pkg/generated/openapi"
)

// The kinds kube-emu serves (kube-emu/resources.c), and the Scale of
// /scale subresources.
var roots = []struct {
	group, version, kind string
	v                    any
}{
	{"", "v1", "Namespace", corev1.Namespace{}},
	{"", "v1", "ConfigMap", corev1.ConfigMap{}},
	{"", "v1", "Secret", corev1.Secret{}},
	{"", "v1", "Service", corev1.Service{}},
	{"", "v1", "ServiceAccount", corev1.ServiceAccount{}},
	{"", "v1", "Pod", corev1.Pod{}},
	{"", "v1", "Endpoints", corev1.Endpoints{}},
	{"", "v1", "Event", corev1.Event{}},
	{"apps", "v1", "Deployment", appsv1.Deployment{}},
	{"apps", "v1", "StatefulSet", appsv1.StatefulSet{}},
	{"apps", "v1", "DaemonSet", appsv1.DaemonSet{}},
	{"apps", "v1", "ReplicaSet", appsv1.ReplicaSet{}},
	{"batch", "v1", "Job", batchv1.Job{}},
	{"batch", "v1", "CronJob", batchv1.CronJob{}},
	{"rbac.authorization.k8s.io", "v1", "Role", rbacv1.Role{}},
	{"rbac.authorization.k8s.io", "v1", "RoleBinding", rbacv1.RoleBinding{}},
	{"rbac.authorization.k8s.io", "v1", "ClusterRole", rbacv1.ClusterRole{}},
	{"rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", rbacv1.ClusterRoleBinding{}},
	{"networking.k8s.io", "v1", "Ingress", networkingv1.Ingress{}},
	{"networking.k8s.io", "v1", "NetworkPolicy", networkingv1.NetworkPolicy{}},
	{"policy", "v1", "PodDisruptionBudget", policyv1.PodDisruptionBudget{}},
	{"autoscaling", "v2", "HorizontalPodAutoscaler", autoscalingv2.HorizontalPodAutoscaler{}},
	{"autoscaling", "v1", "Scale", autoscalingv1.Scale{}},
	{"coordination.k8s.io", "v1", "Lease", coordinationv1.Lease{}},
	{"events.k8s.io", "v1", "Event", eventsv1.Event{}},
	{"apiextensions.k8s.io", "v1", "CustomResourceDefinition", apiextv1.CustomResourceDefinition{}},
	{"apiregistration.k8s.io", "v1", "APIService", apiregv1.APIService{}},
	// Not served by kube-emu: for what the server stores of them
	// (diff/stored.c).
	{"", "v1", "PersistentVolume", corev1.PersistentVolume{}},
	{"", "v1", "PersistentVolumeClaim", corev1.PersistentVolumeClaim{}},
	{"", "v1", "ReplicationController", corev1.ReplicationController{}},
	{"", "v1", "PodTemplate", corev1.PodTemplate{}},
	{"", "v1", "LimitRange", corev1.LimitRange{}},
	{"", "v1", "ResourceQuota", corev1.ResourceQuota{}},
	{"storage.k8s.io", "v1", "StorageClass", storagev1.StorageClass{}},
	{"scheduling.k8s.io", "v1", "PriorityClass", schedulingv1.PriorityClass{}},
	{"networking.k8s.io", "v1", "IngressClass", networkingv1.IngressClass{}},
	{"discovery.k8s.io", "v1", "EndpointSlice", discoveryv1.EndpointSlice{}},
	{"node.k8s.io", "v1", "RuntimeClass", nodev1.RuntimeClass{}},
	{"admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration", admissionregistrationv1.ValidatingWebhookConfiguration{}},
	{"admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration", admissionregistrationv1.MutatingWebhookConfiguration{}},
}

// Kinds of values, as diff/gotypes.h names them.
const (
	kStruct      = "DIFF_GT_STRUCT"
	kSlice       = "DIFF_GT_SLICE"
	kMap         = "DIFF_GT_MAP"
	kString      = "DIFF_GT_STRING"
	kBool        = "DIFF_GT_BOOL"
	kInt         = "DIFF_GT_INT"
	kFloat       = "DIFF_GT_FLOAT"
	kBytes       = "DIFF_GT_BYTES"
	kQuantity    = "DIFF_GT_QUANTITY"
	kIntOrString = "DIFF_GT_INT_OR_STRING"
	kTime        = "DIFF_GT_TIME"
	kMicroTime   = "DIFF_GT_MICRO_TIME"
	kDuration    = "DIFF_GT_DURATION"
	kRaw         = "DIFF_GT_RAW"
)

type field struct {
	name    string
	typ     int
	flags   []string
	rel     string
	keys    []string
	def     string
	goField string
}

type typ struct {
	name   string
	gotype string // as encoding/json names it in its errors
	kind   string
	elem   int
	rel    string
	fields []field
}

var (
	defs  = map[string]common.OpenAPIDefinition{}
	types []*typ
	index = map[reflect.Type]int{}
)

func ref(path string) spec.Ref { return spec.MustCreateRef("#/definitions/" + path) }

type modelNamer interface{ OpenAPIModelName() string }

func modelName(t reflect.Type) string {
	v := reflect.New(t)
	if m, ok := v.Interface().(modelNamer); ok {
		return m.OpenAPIModelName()
	}
	if m, ok := v.Elem().Interface().(modelNamer); ok {
		return m.OpenAPIModelName()
	}
	return t.PkgPath() + "." + t.Name()
}

func mapRel(ext spec.Extensions) string {
	switch ext["x-kubernetes-map-type"] {
	case "atomic":
		return "DIFF_GT_REL_ATOMIC"
	case "granular":
		return "DIFF_GT_REL_GRANULAR"
	}
	return "DIFF_GT_REL_DEFAULT"
}

// listRel follows schemaconv's getListElementRelationship.
func listRel(ext spec.Extensions) (string, []string) {
	if v, ok := ext["x-kubernetes-list-type"]; ok {
		switch v {
		case "set":
			return "DIFF_GT_REL_SET", nil
		case "map":
			var keys []string
			switch k := ext["x-kubernetes-list-map-keys"].(type) {
			case []string:
				keys = k
			case []any:
				for _, s := range k {
					keys = append(keys, s.(string))
				}
			}
			return "DIFF_GT_REL_MAP", keys
		}
		return "DIFF_GT_REL_ATOMIC", nil
	}
	if v, ok := ext["x-kubernetes-patch-strategy"]; ok {
		if v == "merge" || v == "merge,retainKeys" {
			if k, ok := ext["x-kubernetes-patch-merge-key"].(string); ok {
				return "DIFF_GT_REL_MAP", []string{k}
			}
			return "DIFF_GT_REL_SET", nil
		}
	}
	return "DIFF_GT_REL_ATOMIC", nil
}

var (
	tQuantity  = reflect.TypeOf(resource.Quantity{})
	tIntOrStr  = reflect.TypeOf(intstr.IntOrString{})
	tTime      = reflect.TypeOf(metav1.Time{})
	tMicroTime = reflect.TypeOf(metav1.MicroTime{})
	tDuration  = reflect.TypeOf(metav1.Duration{})
	tRaw       = reflect.TypeOf(runtime.RawExtension{})
	tJSON      = reflect.TypeOf(apiextv1.JSON{})
	tFieldsV1  = reflect.TypeOf(metav1.FieldsV1{})

	jsonUnmarshaler = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()
)

func leaf(name, gotype, kind string) int {
	for i, t := range types {
		if t.kind == kind && t.name == name && t.gotype == gotype &&
			t.fields == nil && t.elem < 0 {
			return i
		}
	}
	types = append(types, &typ{name: name, gotype: gotype, kind: kind, elem: -1})
	return len(types) - 1
}

func typeOf(t reflect.Type) int {
	if i, ok := index[t]; ok {
		return i
	}
	switch t {
	case tQuantity:
		return leaf("Quantity", t.String(), kQuantity)
	case tIntOrStr:
		return leaf("IntOrString", t.String(), kIntOrString)
	case tTime:
		return leaf("Time", t.String(), kTime)
	case tMicroTime:
		return leaf("MicroTime", t.String(), kMicroTime)
	case tDuration:
		return leaf("Duration", t.String(), kDuration)
	case tRaw, tJSON, tFieldsV1:
		return leaf("RawJSON", t.String(), kRaw)
	}
	// Types that decode themselves (JSONSchemaPropsOrArray, ...) take
	// any JSON as far as kube-emu is concerned.
	if t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface &&
		(reflect.PointerTo(t).Implements(jsonUnmarshaler) || t.Implements(jsonUnmarshaler)) {
		return leaf("RawJSON", t.String(), kRaw)
	}
	switch t.Kind() {
	case reflect.Pointer:
		return typeOf(t.Elem())
	case reflect.String:
		return leaf("string", t.Kind().String(), kString)
	case reflect.Bool:
		return leaf("bool", t.Kind().String(), kBool)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return leaf("integer", t.Kind().String(), kInt)
	case reflect.Float32, reflect.Float64:
		return leaf("number", t.Kind().String(), kFloat)
	case reflect.Interface:
		return leaf("RawJSON", t.String(), kRaw)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return leaf("bytes", t.String(), kBytes)
		}
		nt := &typ{name: "[]" + t.Elem().Name(), gotype: t.String(), kind: kSlice, elem: -1}
		types = append(types, nt)
		i := len(types) - 1
		index[t] = i
		nt.elem = typeOf(t.Elem())
		return i
	case reflect.Map:
		nt := &typ{name: "map[string]" + t.Elem().Name(), gotype: t.String(), kind: kMap, elem: -1}
		types = append(types, nt)
		i := len(types) - 1
		index[t] = i
		nt.elem = typeOf(t.Elem())
		return i
	case reflect.Struct:
		name := modelName(t)
		nt := &typ{name: name, gotype: t.String(), kind: kStruct, elem: -1}
		types = append(types, nt)
		i := len(types) - 1
		index[t] = i
		def, ok := defs[name]
		if !ok {
			fmt.Fprintf(os.Stderr, "gen: no OpenAPI definition of %s\n", name)
		}
		nt.rel = mapRel(def.Schema.Extensions)
		nt.fields = structFields(t, def.Schema)
		return i
	}
	panic("gen: unsupported type " + t.String())
}

// structFields: the JSON fields of a struct, embedded inline structs
// flattened as encoding/json does.
func structFields(t reflect.Type, sch spec.Schema) []field {
	var out []field
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				out = append(out, structFields(ft, sch)...)
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		fd := field{name: name, goField: f.Name}
		for _, o := range strings.Split(opts, ",") {
			switch o {
			case "omitempty":
				fd.flags = append(fd.flags, "DIFF_GT_F_OMITEMPTY")
			case "omitzero":
				fd.flags = append(fd.flags, "DIFF_GT_F_OMITZERO")
			}
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			fd.flags = append(fd.flags, "DIFF_GT_F_POINTER")
		}
		fd.typ = typeOf(ft)
		prop := sch.Properties[name]
		switch types[fd.typ].kind {
		case kSlice:
			fd.rel, fd.keys = listRel(prop.Extensions)
		case kMap, kStruct:
			fd.rel = mapRel(prop.Extensions)
		default:
			fd.rel = "DIFF_GT_REL_DEFAULT"
		}
		if prop.Default != nil {
			b, _ := json.Marshal(prop.Default)
			fd.def = string(b)
		}
		out = append(out, fd)
	}
	return out
}

func cstr(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func main() {
	for _, get := range []func(common.ReferenceCallback) map[string]common.OpenAPIDefinition{
		k8sopenapi.GetOpenAPIDefinitions, aeopenapi.GetOpenAPIDefinitions,
		aggopenapi.GetOpenAPIDefinitions,
	} {
		for k, v := range get(ref) {
			defs[k] = v
		}
	}
	rootIdx := make([]int, len(roots))
	for i, r := range roots {
		rootIdx[i] = typeOf(reflect.TypeOf(r.v))
	}
	w := os.Stdout
	fmt.Fprintln(w, "/*")
	fmt.Fprintln(w, " * Generated by diff/gen from the k8s.io modules of")
	fmt.Fprintln(w, " * kube-apiserver 1.36 (k8s.io/api, the generated OpenAPI definitions):")
	fmt.Fprintln(w, " * do not edit. See diff/gotypes.h.")
	fmt.Fprintln(w, " */")
	fmt.Fprintln(w, "#include \"diff/gotypes.h\"")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "#include \"util/banned.h\" /* last */")
	fmt.Fprintln(w)
	for i, t := range types {
		if t.kind != kStruct || len(t.fields) == 0 {
			continue
		}
		for j, f := range t.fields {
			if len(f.keys) > 0 {
				fmt.Fprintf(w, "static const char *const k%d_%d[] = {", i, j)
				for _, k := range f.keys {
					fmt.Fprintf(w, "%s, ", cstr(k))
				}
				fmt.Fprintln(w, "NULL};")
			}
		}
		// Fields sorted by name: the C side looks them up by bisection;
		// `order` keeps Go's order, which is how the server encodes.
		sorted := make([]int, len(t.fields))
		for j := range sorted {
			sorted[j] = j
		}
		sort.Slice(sorted, func(a, b int) bool { return t.fields[sorted[a]].name < t.fields[sorted[b]].name })
		fmt.Fprintf(w, "/* %s */\nstatic const struct diff_gotype_field f%d[] = {\n", t.name, i)
		for _, j := range sorted {
			f := t.fields[j]
			flags := "0"
			if len(f.flags) > 0 {
				flags = strings.Join(f.flags, " | ")
			}
			keys := "NULL"
			if len(f.keys) > 0 {
				keys = fmt.Sprintf("k%d_%d", i, j)
			}
			def := "NULL"
			if f.def != "" {
				def = cstr(f.def)
			}
			fmt.Fprintf(w, "\t{%s, %d, %d, %s, %s, %s, %s},\n", cstr(f.name), f.typ, j, flags, f.rel, keys, def)
		}
		fmt.Fprintln(w, "};")
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "const struct diff_gotype diff_gotypes[] = {\n")
	for i, t := range types {
		fields, n := "NULL", 0
		if t.kind == kStruct && len(t.fields) > 0 {
			fields, n = fmt.Sprintf("f%d", i), len(t.fields)
		}
		rel := t.rel
		if rel == "" {
			rel = "DIFF_GT_REL_DEFAULT"
		}
		fmt.Fprintf(w, "\t/* %d */ {%s, %s, %s, %d, %s, %s, %d},\n", i, cstr(t.name), cstr(t.gotype), t.kind, t.elem, rel, fields, n)
	}
	fmt.Fprintln(w, "};")
	fmt.Fprintf(w, "const size_t diff_ngotypes = %d;\n\n", len(types))
	fmt.Fprintln(w, "const struct diff_gotype_kind diff_gotype_kinds[] = {")
	for i, r := range roots {
		fmt.Fprintf(w, "\t{%s, %s, %s, %d},\n", cstr(r.group), cstr(r.version), cstr(r.kind), rootIdx[i])
	}
	fmt.Fprintln(w, "\t{NULL, NULL, NULL, -1},")
	fmt.Fprintln(w, "};")
}
