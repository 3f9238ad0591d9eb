// Top-level arguments: a string and code; `port` keeps its default.
function(name, replicas, port=8080) {
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: name },
  data: { replicas: std.toString(replicas), port: std.toString(port),
          type: std.type(replicas) },
}
