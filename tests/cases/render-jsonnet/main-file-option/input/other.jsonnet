error 'not the main file'
