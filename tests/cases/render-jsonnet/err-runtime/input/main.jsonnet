local check(x) = if x > 2 then error 'too many replicas: ' + x else x;
{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' },
  data: { n: std.toString(check(std.extVar('n'))) } }
