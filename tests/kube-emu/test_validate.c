/*
 * Unit tests of kube-emu's object validation: each rule with the Status
 * kube-apiserver 1.36 answers (message, reason, causes).
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "kube-emu/emu.h"

#include "util/banned.h" /* last */

static const struct emu_resource *vres(const char *g, const char *plural)
{
	const struct emu_resource *r = emu_resource_find(
		g, !strcmp(g, "autoscaling") ? "v2" : "v1", plural);

	cr_assert_not_null(r, "resource %s", plural);
	return r;
}

static json_t *vload(const char *text)
{
	json_error_t e;
	json_t *j = json_loads(text, 0, &e);

	cr_assert_not_null(j, "bad JSON in test: %s: %s", e.text, text);
	return j;
}

static json_t *validate(const char *g, const char *plural, const char *obj)
{
	json_t *o = vload(obj), *st;

	st = emu_validate_object(vres(g, plural), o, NULL, NULL);
	json_decref(o);
	return st;
}

static void valid(const char *g, const char *plural, const char *obj)
{
	json_t *st = validate(g, plural, obj);
	char *s = st ? json_dumps(st, 0) : NULL;

	cr_assert_null(st, "refused: %s", s);
	free(s);
}

/* The Status's message is `msg`, its code `code`. */
static json_t *refused(const char *g, const char *plural, const char *obj,
		       int code, const char *msg)
{
	json_t *st = validate(g, plural, obj);

	cr_assert_not_null(st, "accepted: %s", obj);
	cr_assert_eq(json_integer_value(json_object_get(st, "code")), code);
	cr_assert_str_eq(json_string_value(json_object_get(st, "message")),
			 msg);
	return st;
}

/* Cause i of a 422. */
static void cause(const json_t *st, size_t i, const char *reason,
		  const char *field, const char *message)
{
	const json_t *c = json_array_get(
		json_object_get(json_object_get(st, "details"), "causes"), i);

	cr_assert_not_null(c, "no cause %zu", i);
	cr_assert_str_eq(json_string_value(json_object_get(c, "reason")),
			 reason);
	cr_assert_str_eq(json_string_value(json_object_get(c, "field")), field);
	cr_assert_str_eq(json_string_value(json_object_get(c, "message")),
			 message);
}

static size_t ncauses(const json_t *st)
{
	return json_array_size(
		json_object_get(json_object_get(st, "details"), "causes"));
}

#define QNAME_MSG                                                             \
	"must consist of alphanumeric characters, '-', '_' or '.', and must " \
	"start and end with an alphanumeric character (e.g. 'MyName',  or "   \
	"'my.name',  or '123-abc', regex used for validation is "             \
	"'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
#define LVALUE_MSG                                                          \
	"a valid label must be an empty string or consist of alphanumeric " \
	"characters, '-', '_' or '.', and must start and end with an "      \
	"alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "      \
	"'12345', regex used for validation is "                            \
	"'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
#define SUBDOMAIN_MSG                                                       \
	"a lowercase RFC 1123 subdomain must consist of lower case "        \
	"alphanumeric characters, '-' or '.', and must start and end with " \
	"an alphanumeric character (e.g. 'example.com', regex used for "    \
	"validation is "                                                    \
	"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
#define DNS_LABEL_MSG                                                         \
	"a lowercase RFC 1123 label must consist of lower case alphanumeric " \
	"characters or '-', and must start and end with an alphanumeric "     \
	"character (e.g. 'my-name',  or '123-abc', regex used for "           \
	"validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
#define CONFIG_KEY_MSG                                                        \
	"a valid config key must consist of alphanumeric characters, '-', "   \
	"'_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex " \
	"used for validation is '[-._a-zA-Z0-9]+')"

Test(validate, labels)
{
	json_t *st;

	valid("", "configmaps",
	      "{\"metadata\":{\"name\":\"c\",\"labels\":{\"app\":\"web\","
	      "\"example.com/My_Name-1.x\":\"\",\"k\":\"a.b-c_D\"}}}");
	st = refused("", "configmaps",
		     "{\"metadata\":{\"name\":\"c\",\"labels\":{"
		     "\"-bad\":\"ok\"}}}",
		     422,
		     "ConfigMap \"c\" is invalid: metadata.labels: Invalid "
		     "value: \"-bad\": name part " QNAME_MSG);
	cr_assert_str_eq(json_string_value(json_object_get(st, "reason")),
			 "Invalid");
	cause(st, 0, "FieldValueInvalid", "metadata.labels",
	      "Invalid value: \"-bad\": name part " QNAME_MSG);
	cr_assert_str_eq(json_string_value(json_object_get(
				 json_object_get(st, "details"), "kind")),
			 "ConfigMap");
	cr_assert_str_eq(json_string_value(json_object_get(
				 json_object_get(st, "details"), "name")),
			 "c");
	json_decref(st);

	st = refused("", "configmaps",
		     "{\"metadata\":{\"name\":\"c\",\"labels\":{"
		     "\"app\":\"a b\"}}}",
		     422,
		     "ConfigMap \"c\" is invalid: metadata.labels: Invalid "
		     "value: \"a b\": " LVALUE_MSG);
	json_decref(st);

	st = refused(
		"", "configmaps",
		"{\"metadata\":{\"name\":\"c\",\"labels\":{"
		"\"Bad.Prefix/x\":\"v\",\"a/b/c\":\"v\",\"/x\":\"v\","
		"\"app\":\"-----------------------------------------------"
		"---------------------x\"}}}",
		422,
		"ConfigMap \"c\" is invalid: [metadata.labels: Invalid "
		"value: \"Bad.Prefix/x\": prefix part " SUBDOMAIN_MSG
		", metadata.labels: Invalid value: \"a/b/c\": a qualified "
		"name " QNAME_MSG " with an optional DNS subdomain prefix "
		"and '/' (e.g. 'example.com/MyName'), metadata.labels: "
		"Invalid value: \"/x\": prefix part must be non-empty, "
		"metadata.labels: Invalid value: \"-------------------------"
		"-------------------------------------------x\": must be no "
		"more than 63 characters, metadata.labels: Invalid value: "
		"\"-----------------------------------------------------------"
		"---------x\": " LVALUE_MSG "]");
	cr_assert_eq(ncauses(st), 5);
	json_decref(st);
}

Test(validate, label_name_too_long)
{
	json_t *st = refused(
		"", "configmaps",
		"{\"metadata\":{\"name\":\"c\",\"labels\":{"
		"\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		"a"
		"aaa\":\"v\"}}}",
		422,
		"ConfigMap \"c\" is invalid: metadata.labels: Invalid value: "
		"\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		"aaaa\": name part must be no more than 63 characters");

	json_decref(st);
}

Test(validate, annotations)
{
	json_t *obj, *st;
	char *big;

	/* Case does not matter in annotation keys. */
	valid("", "configmaps",
	      "{\"metadata\":{\"name\":\"c\",\"annotations\":{"
	      "\"Example.COM/Some_Key\":\"any value at all: {}\"}}}");
	st = refused("apps", "deployments",
		     "{\"metadata\":{\"name\":\"w\",\"annotations\":{"
		     "\"a b\":\"x\"}},\"spec\":{\"selector\":{\"matchLabels\":"
		     "{\"a\":\"b\"}},\"template\":{\"metadata\":{\"labels\":"
		     "{\"a\":\"b\"}},\"spec\":{\"restartPolicy\":\"Always\","
		     "\"containers\":[{\"name\":\"c\","
		     "\"image\":\"i\"}]}}}}",
		     422,
		     "Deployment.apps \"w\" is invalid: metadata.annotations: "
		     "Invalid value: \"a b\": name part " QNAME_MSG);
	cr_assert_str_eq(json_string_value(json_object_get(
				 json_object_get(st, "details"), "group")),
			 "apps");
	json_decref(st);

	/* Keys and values together: 262144 bytes are allowed. */
	big = malloc(262143);
	memset(big, 'x', 262142);
	big[262142] = '\0';
	obj = json_pack("{s:{s:s, s:{s:s}}}", "metadata", "name", "c",
			"annotations", "k1", big);
	st = emu_validate_object(vres("", "configmaps"), obj, NULL, NULL);
	cr_assert_null(st, "262144 bytes refused");
	json_decref(obj);
	obj = json_pack("{s:{s:s, s:{s:s, s:s}}}", "metadata", "name", "c",
			"annotations", "k1", big, "k", "xx");
	st = emu_validate_object(vres("", "configmaps"), obj, NULL, NULL);
	cr_assert_not_null(st);
	cr_assert_str_eq(json_string_value(json_object_get(st, "message")),
			 "ConfigMap \"c\" is invalid: metadata.annotations: "
			 "Too long: must have at most 262144 bytes");
	cause(st, 0, "FieldValueTooLong", "metadata.annotations",
	      "Too long: must have at most 262144 bytes");
	json_decref(st);
	json_decref(obj);
	free(big);
}

Test(validate, configmap_keys)
{
	json_t *st;

	valid("", "configmaps",
	      "{\"metadata\":{\"name\":\"c\"},\"data\":{\"a.b\":\"1\","
	      "\"KEY_x-1\":\"\"},\"binaryData\":{\"bin\":\"AAEC\"}}");
	st = refused(
		"", "configmaps",
		"{\"metadata\":{\"name\":\"c\"},\"data\":{\"a b\":\"1\","
		"\"..x\":\"2\",\"dup\":\"\"},\"binaryData\":{\"dup\":"
		"\"AA==\"}}",
		422,
		"ConfigMap \"c\" is invalid: [data[a b]: Invalid value: "
		"\"a b\": " CONFIG_KEY_MSG ", data[..x]: Invalid value: "
		"\"..x\": must not start with '..', data[dup]: Invalid "
		"value: \"dup\": duplicate of key present in binaryData, "
		"binaryData[dup]: Invalid value: \"dup\": duplicate of key "
		"present in data]");
	cause(st, 0, "FieldValueInvalid", "data[a b]",
	      "Invalid value: \"a b\": " CONFIG_KEY_MSG);
	json_decref(st);
	st = refused("", "configmaps",
		     "{\"metadata\":{\"name\":\"c\"},\"data\":{\".\":\"1\"}}",
		     422,
		     "ConfigMap \"c\" is invalid: data[.]: Invalid value: "
		     "\".\": must not be '.'");
	json_decref(st);
}

Test(validate, decode_errors)
{
	json_t *st;

	st = refused("", "configmaps",
		     "{\"metadata\":{\"name\":\"c\"},\"data\":{\"x\":true}}",
		     400,
		     "ConfigMap in version \"v1\" cannot be handled as a "
		     "ConfigMap: json: cannot unmarshal bool into Go struct "
		     "field ConfigMap.data of type string");
	cr_assert_str_eq(json_string_value(json_object_get(st, "reason")),
			 "BadRequest");
	cr_assert_null(json_object_get(st, "details"));
	json_decref(st);
	json_decref(refused(
		"", "configmaps",
		"{\"metadata\":{\"name\":\"c\"},\"data\":{\"x\":1}}", 400,
		"ConfigMap in version \"v1\" cannot be handled as "
		"a ConfigMap: json: cannot unmarshal number into "
		"Go struct field ConfigMap.data of type string"));
	json_decref(refused("", "configmaps",
			    "{\"metadata\":{\"name\":\"c\",\"labels\":{\"a\":"
			    "{}}}}",
			    400,
			    "ConfigMap in version \"v1\" cannot be handled as "
			    "a ConfigMap: json: cannot unmarshal object into "
			    "Go struct field ObjectMeta.metadata.labels of "
			    "type string"));
	json_decref(refused("", "secrets",
			    "{\"metadata\":{\"name\":\"s\"},\"data\":{\"x\":"
			    "\"not base64!\"}}",
			    400,
			    "Secret in version \"v1\" cannot be handled as a "
			    "Secret: illegal base64 data at input byte 3"));
	json_decref(refused("", "secrets",
			    "{\"metadata\":{\"name\":\"s\"},\"data\":{\"x\":"
			    "\"abc\"}}",
			    400,
			    "Secret in version \"v1\" cannot be handled as a "
			    "Secret: illegal base64 data at input byte 0"));
	json_decref(
		refused("", "configmaps",
			"{\"metadata\":{\"name\":\"c\"},\"binaryData\":{"
			"\"x\":\"YWJjZA=x\"}}",
			400,
			"ConfigMap in version \"v1\" cannot be handled as "
			"a ConfigMap: illegal base64 data at input byte 6"));
	json_decref(refused("", "secrets",
			    "{\"metadata\":{\"name\":\"s\"},\"stringData\":{"
			    "\"x\":[]}}",
			    400,
			    "Secret in version \"v1\" cannot be handled as a "
			    "Secret: json: cannot unmarshal array into Go "
			    "struct field Secret.stringData of type string"));
	valid("", "secrets",
	      "{\"metadata\":{\"name\":\"s\"},\"data\":{\"a\":\"YWJjZA==\","
	      "\"b\":\"YWJj\",\"c\":\"\",\"d\":\"YW\\nJj\"}}");
}

Test(validate, secret_keys)
{
	json_decref(refused("", "secrets",
			    "{\"metadata\":{\"name\":\"s\"},\"data\":{\"a/b\":"
			    "\"eA==\"}}",
			    422,
			    "Secret \"s\" is invalid: data[a/b]: Invalid "
			    "value: \"a/b\": " CONFIG_KEY_MSG));
}

#define TEMPLATE(labels, containers)                                    \
	"\"template\":{\"metadata\":{\"labels\":" labels "},\"spec\":{" \
	"\"restartPolicy\":\"Always\",\"containers\":" containers "}}"
#define OK_CONTAINERS "[{\"name\":\"web\",\"image\":\"nginx\"}]"

Test(validate, workload_selector)
{
	json_t *st;

	valid("apps", "deployments",
	      "{\"metadata\":{\"name\":\"w\"},\"spec\":{\"replicas\":0,"
	      "\"selector\":{\"matchLabels\":{\"app\":\"web\"},"
	      "\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"In\","
	      "\"values\":[\"a\",\"b\"]},{\"key\":\"x\",\"operator\":"
	      "\"DoesNotExist\"}]}," TEMPLATE(
		      "{\"app\":\"web\",\"tier\":\"b\"}", OK_CONTAINERS) "}}");
	st = refused(
		"apps", "deployments",
		"{\"metadata\":{\"name\":\"w\"},\"spec\":{" TEMPLATE(
			"{\"app\":\"web\",\"a\":\"1\"}", OK_CONTAINERS) "}}",
		422,
		"Deployment.apps \"w\" is invalid: [spec.selector: "
		"Required value, spec.template.metadata.labels: Invalid "
		"value: {\"a\":\"1\",\"app\":\"web\"}: "
		"`selector` does not match template `labels`]");
	cause(st, 0, "FieldValueRequired", "spec.selector", "Required value");
	cause(st, 1, "FieldValueInvalid", "spec.template.metadata.labels",
	      "Invalid value: {\"a\":\"1\",\"app\":\"web\"}: "
	      "`selector` does not match template "
	      "`labels`");
	json_decref(st);
	json_decref(refused(
		"apps", "statefulsets",
		"{\"metadata\":{\"name\":\"s\"},\"spec\":{\"selector\":{"
		"\"matchLabels\":{\"app\":\"db\"}},"
		"\"template\":{\"spec\":{\"restartPolicy\":\"Always\","
		"\"containers\":" OK_CONTAINERS "}}}}",
		422,
		"StatefulSet.apps \"s\" is invalid: "
		"spec.template.metadata.labels: Invalid value: "
		"null: `selector` does not match template "
		"`labels`"));
	json_decref(refused("apps", "replicasets",
			    "{\"metadata\":{\"name\":\"r\"},\"spec\":{"
			    "\"selector\":{}," TEMPLATE("{\"a\":\"b\"}",
							OK_CONTAINERS) "}}",
			    422,
			    "ReplicaSet.apps \"r\" is invalid: spec.selector: "
			    "Invalid value: {}: empty selector is invalid "
			    "for deployment"));
	json_decref(refused(
		"apps", "daemonsets",
		"{\"metadata\":{\"name\":\"d\"},\"spec\":{"
		"\"selector\":{\"matchLabels\":{\"a\":\"c\"}}," TEMPLATE(
			"{\"a\":\"b\"}", OK_CONTAINERS) "}}",
		422,
		"DaemonSet.apps \"d\" is invalid: "
		"spec.template.metadata.labels: Invalid value: "
		"{\"a\":\"b\"}: `selector` does "
		"not match template `labels`"));
}

Test(validate, replicas_and_containers)
{
	json_t *st;

	st = refused(
		"apps", "deployments",
		"{\"metadata\":{\"name\":\"w\"},\"spec\":{\"replicas\":-1,"
		"\"selector\":{\"matchLabels\":{\"a\":\"b\"}}," TEMPLATE(
			"{\"a\":\"b\"}",
			"[{\"name\":\"Web\",\"image\":\"\",\"ports\":["
			"{\"containerPort\":0,\"protocol\":\"TCP\"},"
			"{\"containerPort\":70000,\"name\":\"http\","
			"\"protocol\":\"TCP\"},{\"containerPort\":81,"
			"\"name\":\"http\",\"protocol\":\"TCP\"},"
			"{\"containerPort\":82,\"name\":\"Bad_Name\","
			"\"protocol\":\"TCPX\"}]},{\"image\":\"x\"},"
			"{\"name\":\"Web\",\"image\":\"x\"}]") "}}",
		422,
		"Deployment.apps \"w\" is invalid: [spec.replicas: Invalid "
		"value: -1: must be greater than or equal to 0, "
		"spec.template.spec.containers[0].name: Invalid value: "
		"\"Web\": " DNS_LABEL_MSG
		", spec.template.spec.containers[0].image: "
		"Required value, "
		"spec.template.spec.containers[0].ports[0].containerPort: "
		"Required value, "
		"spec.template.spec.containers[0].ports[1].containerPort: "
		"Invalid value: 70000: must be between 1 and 65535, inclusive, "
		"spec.template.spec.containers[0].ports[2].name: Duplicate "
		"value: \"http\", "
		"spec.template.spec.containers[0].ports[3].name: Invalid "
		"value: "
		"\"Bad_Name\": must contain only alpha-numeric characters "
		"(a-z, "
		"0-9), and hyphens (-), "
		"spec.template.spec.containers[0].ports[3].protocol: "
		"Unsupported "
		"value: \"TCPX\": supported values: \"SCTP\", \"TCP\", "
		"\"UDP\", "
		"spec.template.spec.containers[1].name: Required value, "
		"spec.template.spec.containers[2].name: Invalid value: "
		"\"Web\": " DNS_LABEL_MSG
		", spec.template.spec.containers[2].name: "
		"Duplicate value: \"Web\"]");
	cause(st, 0, "FieldValueInvalid", "spec.replicas",
	      "Invalid value: -1: must be greater than or equal to 0");
	cause(st, 5, "FieldValueDuplicate",
	      "spec.template.spec.containers[0].ports[2].name",
	      "Duplicate value: \"http\"");
	cause(st, 7, "FieldValueNotSupported",
	      "spec.template.spec.containers[0].ports[3].protocol",
	      "Unsupported value: \"TCPX\": supported values: \"SCTP\", "
	      "\"TCP\", \"UDP\"");
	json_decref(st);

	json_decref(refused(
		"apps", "deployments",
		"{\"metadata\":{\"name\":\"w\"},\"spec\":{\"selector\":{"
		"\"matchLabels\":{\"a\":\"b\"}}," TEMPLATE("{\"a\":\"b\"}",
							   "[]") "}}",
		422,
		"Deployment.apps \"w\" is invalid: "
		"spec.template.spec.containers: Required value"));
	json_decref(refused(
		"", "pods",
		"{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{"
		"\"name\":\"a\",\"image\":\"i\"}],\"initContainers\":[{"
		"\"name\":\"-i\",\"image\":\"i\"}]}}",
		422,
		"Pod \"p\" is invalid: spec.initContainers[0].name: Invalid "
		"value: \"-i\": " DNS_LABEL_MSG));
}

Test(validate, workload_restart_policy)
{
	json_decref(refused("apps", "deployments",
			    "{\"metadata\":{\"name\":\"w\"},\"spec\":{"
			    "\"selector\":{\"matchLabels\":{\"a\":\"b\"}},"
			    "\"template\":{\"metadata\":{\"labels\":{\"a\":"
			    "\"b\"}},\"spec\":{\"restartPolicy\":\"Never\","
			    "\"containers\":" OK_CONTAINERS "}}}}",
			    422,
			    "Deployment.apps \"w\" is invalid: "
			    "spec.template.spec.restartPolicy: Unsupported "
			    "value: \"Never\": supported values: \"Always\""));
}

Test(validate, template_labels)
{
	json_decref(refused(
		"apps", "deployments",
		"{\"metadata\":{\"name\":\"w\"},\"spec\":{"
		"\"selector\":{\"matchLabels\":{\"a\":\"b\"}}," TEMPLATE(
			"{\"a\":\"b\",\"c\":\"-\"}", OK_CONTAINERS) "}}",
		422,
		"Deployment.apps \"w\" is invalid: "
		"spec.template.labels: Invalid value: \"-\": " LVALUE_MSG));
}

Test(validate, jobs)
{
	valid("batch", "jobs",
	      "{\"metadata\":{\"name\":\"j\"},\"spec\":{\"selector\":{"
	      "\"matchLabels\":{\"a\":\"b\"}},\"template\":{\"metadata\":{"
	      "\"labels\":{\"a\":\"b\"}},\"spec\":{\"restartPolicy\":"
	      "\"Never\",\"containers\":" OK_CONTAINERS "}}}}");
	json_decref(refused(
		"batch", "jobs",
		"{\"metadata\":{\"name\":\"j\"},\"spec\":{\"selector\":{"
		"\"matchLabels\":{\"a\":\"b\"}},\"template\":{\"metadata\":{"
		"\"labels\":{\"a\":\"b\"}},\"spec\":{\"restartPolicy\":"
		"\"Always\",\"containers\":" OK_CONTAINERS "}}}}",
		422,
		"Job.batch \"j\" is invalid: spec.template.spec.restartPolicy: "
		"Unsupported value: \"Always\": supported values: "
		"\"OnFailure\", \"Never\""));
	json_decref(refused(
		"batch", "cronjobs",
		"{\"metadata\":{\"name\":\"c\"},\"spec\":{\"jobTemplate\":{"
		"\"spec\":{\"template\":{\"spec\":{\"restartPolicy\":"
		"\"OnFailure\",\"containers\":[{\"name\":\"c\"}]}}}}}}",
		422,
		"CronJob.batch \"c\" is invalid: "
		"spec.jobTemplate.spec.template.spec.containers[0].image: "
		"Required value"));
}

Test(validate, services)
{
	json_t *st;

	valid("", "services",
	      "{\"metadata\":{\"name\":\"s\"},\"spec\":{\"type\":"
	      "\"ClusterIP\",\"ports\":[{\"port\":80,\"protocol\":\"TCP\","
	      "\"targetPort\":\"http\"}]}}");
	valid("", "services",
	      "{\"metadata\":{\"name\":\"s\"},\"spec\":{\"clusterIP\":"
	      "\"None\",\"type\":\"ClusterIP\"}}");
	valid("", "services",
	      "{\"metadata\":{\"name\":\"s\"},\"spec\":{\"type\":"
	      "\"ExternalName\",\"externalName\":\"db.example.com\"}}");
	json_decref(refused("", "services",
			    "{\"metadata\":{\"name\":\"s\"},\"spec\":{"
			    "\"type\":\"ClusterIP\"}}",
			    422,
			    "Service \"s\" is invalid: spec.ports: Required "
			    "value"));
	json_decref(refused("", "services",
			    "{\"metadata\":{\"name\":\"s\"},\"spec\":{"
			    "\"type\":\"ExternalName\"}}",
			    422,
			    "Service \"s\" is invalid: spec.externalName: "
			    "Required value"));
	st = refused(
		"", "services",
		"{\"metadata\":{\"name\":\"s\"},\"spec\":{\"type\":"
		"\"Cluster\",\"ports\":[{\"port\":0,\"protocol\":\"TCP\","
		"\"targetPort\":0},{\"name\":\"b\",\"port\":80,"
		"\"protocol\":\"TCP\",\"targetPort\":80},{\"name\":\"b\","
		"\"port\":81,\"protocol\":\"TCP\",\"targetPort\":81}]}}",
		422,
		"Service \"s\" is invalid: [spec.ports[0].name: Required "
		"value, spec.ports[0].port: Invalid value: 0: must be "
		"between 1 and 65535, inclusive, spec.ports[0].targetPort: "
		"Invalid value: 0: must be between 1 and 65535, inclusive, "
		"spec.ports[2].name: Duplicate value: \"b\", spec.type: "
		"Unsupported value: \"Cluster\": supported values: "
		"\"ClusterIP\", \"ExternalName\", \"LoadBalancer\", "
		"\"NodePort\"]");
	cause(st, 4, "FieldValueNotSupported", "spec.type",
	      "Unsupported value: \"Cluster\": supported values: "
	      "\"ClusterIP\", \"ExternalName\", \"LoadBalancer\", "
	      "\"NodePort\"");
	json_decref(st);
}

Test(validate, other_kinds_pass)
{
	valid("", "serviceaccounts", "{\"metadata\":{\"name\":\"a\"}}");
	valid("networking.k8s.io", "ingresses",
	      "{\"metadata\":{\"name\":\"i\"},\"spec\":{}}");
}
