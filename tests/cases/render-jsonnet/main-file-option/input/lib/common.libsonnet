{ cm(n):: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: n },
            data: { note: importstr 'note.txt' } } }
