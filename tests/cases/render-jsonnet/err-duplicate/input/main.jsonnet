{
  first: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'same' } },
  second: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'same' } },
}
