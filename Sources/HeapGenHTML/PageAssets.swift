// The page's inline stylesheet and script (no network: everything is in the file).

/// CSS and JavaScript shared by the report and the diff pages. The script only adds
/// interaction (filters, sorting, zoom); everything essential is plain HTML and SVG.
enum PageAssets {
    static let css = """
    :root{--bg:#f6f7f9;--card:#fff;--ink:#1d2330;--mute:#667085;--line:#e3e6eb;--abandoned:#d9480f;--leaked:#9c36b5;--cache:#1c7ed6;--good:#2b8a3e}
    *{box-sizing:border-box}
    body{margin:0;background:var(--bg);color:var(--ink);font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif}
    main{max-width:1060px;margin:0 auto;padding:18px 22px 40px}
    h1{font-size:22px;margin:0 0 2px}h2{font-size:17px;margin:0 0 10px}
    code,.mono{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,monospace;font-size:12.5px}
    a{color:#1864ab;text-decoration:none}a:hover{text-decoration:underline}
    .sub{color:var(--mute);margin:0 0 12px;word-break:break-all}
    .card{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:16px 18px;margin:14px 0;box-shadow:0 1px 2px rgba(16,24,40,.04)}
    .verdict{font-size:16px;font-weight:600;padding:10px 14px;border-radius:8px;margin:10px 0}
    .verdict.bad{background:#fff4e6;color:#a23b06;border:1px solid #ffd8a8}.verdict.ok{background:#ebfbee;color:#1f6f31;border:1px solid #b2f2bb}.verdict.none{background:#f1f3f5;color:#495057;border:1px solid #dee2e6}
    .stats{display:flex;flex-wrap:wrap;gap:10px;margin:8px 0 0}
    .stat{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:8px 12px;min-width:130px}
    .stat b{display:block;font-size:17px}.stat span{color:var(--mute);font-size:12px}
    nav.toc{display:flex;gap:14px;flex-wrap:wrap;font-size:13px;margin:6px 0}
    .staircase{width:100%;height:auto;display:block}
    .staircase .grid{stroke:#eef0f3}.staircase .axis{fill:var(--mute);font-size:11px}.staircase .axis-line{stroke:#98a2b3}
    .staircase .warmup{fill:#e9ecef;fill-opacity:.75}.staircase .judged{fill:#fff4e6;fill-opacity:.7}
    .staircase .judged-edge{stroke:var(--abandoned);stroke-width:3}
    .staircase .window-label{fill:var(--mute);font-size:11.5px;font-weight:600}.staircase .judged-label{fill:#a23b06}
    .staircase .mark line{stroke:#adb5bd;stroke-dasharray:3 3}.staircase .mark-label{fill:#495057;font-size:10.5px}
    .staircase .mark:hover line{stroke:#495057;stroke-dasharray:none}.staircase .dense .mark line{stroke:#adb5bd;stroke-opacity:.15;stroke-dasharray:none}.staircase .dense .mark-label{font-size:10px}
    .staircase .area{fill:#ff922b;fill-opacity:.18}.staircase .line{fill:none;stroke:#e8590c;stroke-width:2.4;stroke-linejoin:round}
    .staircase .dot{fill:#fff;stroke:#e8590c;stroke-width:2}
    .staircase .series-objects .area{fill:#4dabf7}.staircase .series-objects .line{stroke:#1c7ed6}.staircase .series-objects .dot{stroke:#1c7ed6}
    .staircase .peak line{stroke:#c92a2a;stroke-dasharray:6 4;stroke-width:1.2}.staircase .peak path{fill:#c92a2a}.staircase .peak text{fill:#c92a2a;font-size:11.5px;font-weight:600}
    .series-objects{display:none}
    #show-objects:checked~.chart .series-objects{display:inline}#show-objects:checked~.chart .series-bytes{display:none}
    .switch{display:inline-flex;border:1px solid var(--line);border-radius:7px;overflow:hidden;margin:0 0 6px}
    .switch-input{position:absolute;opacity:0;pointer-events:none}
    .switch label{padding:4px 12px;cursor:pointer;font-size:13px;color:var(--mute)}
    #show-bytes:checked~.switch label[for=show-bytes],#show-objects:checked~.switch label[for=show-objects]{background:#1d2330;color:#fff}
    .legend{display:flex;gap:16px;flex-wrap:wrap;color:var(--mute);font-size:12px;margin-top:4px}
    .legend i{display:inline-block;width:14px;height:10px;border-radius:2px;margin-right:5px;vertical-align:-1px}
    .toolbar{display:none;gap:10px;flex-wrap:wrap;align-items:center;margin:0 0 10px;font-size:13px}
    body.js .toolbar{display:flex}
    .toolbar input[type=search],.toolbar select{font:inherit;padding:3px 6px;border:1px solid var(--line);border-radius:6px}
    .finding{border:1px solid var(--line);border-left:5px solid var(--mute);border-radius:8px;padding:10px 14px;margin:10px 0;background:#fff}
    .finding.kind-abandoned{border-left-color:var(--abandoned)}.finding.kind-leaked{border-left-color:var(--leaked)}.finding.kind-cache{border-left-color:var(--cache)}
    .finding:target{box-shadow:0 0 0 3px #ffe066}
    .fhead{display:flex;gap:10px;align-items:baseline;flex-wrap:wrap}
    .badge{font-size:11px;font-weight:700;text-transform:uppercase;letter-spacing:.04em;padding:1px 7px;border-radius:10px;color:#fff;background:var(--mute)}
    .badge.abandoned{background:var(--abandoned)}.badge.leaked{background:var(--leaked)}.badge.cache{background:var(--cache)}
    .badge.lib{background:#868e96}
    .fn{font-weight:600;font-size:15px}.loc,.type{color:var(--mute)}
    .fbody{display:flex;gap:18px;align-items:center;flex-wrap:wrap;margin:6px 0}
    .nums{flex:1;min-width:300px;color:#343a40}.nums b{color:var(--ink)}
    .spark{width:260px;height:54px;flex:none}.spark .bar{fill:#ffa94d}.spark .bar.warm{fill:#ced4da}.spark .bar.neg{fill:#74c0fc}.spark-cache .bar{fill:#a5d8ff}
    .spark .run{fill:none;stroke:#d9480f;stroke-width:1.8}.spark-cache .run{stroke:#1c7ed6}.spark-cache .bar{fill:#a5d8ff}.spark-leaked .run{stroke:#9c36b5}
    .spark .base{stroke:#adb5bd}
    details summary{cursor:pointer;color:#1864ab;font-size:13px}
    ol.stack{margin:6px 0 2px;padding-left:28px;font-size:12.5px}
    ol.stack li{padding:1px 0}ol.stack li.lib{color:#868e96}ol.stack li.user{font-weight:600}
    ol.stack li:target{background:#fff3bf}
    ol.stack .where{color:var(--mute);margin-left:8px}.inl{font-size:10.5px;background:#e7f5ff;color:#1864ab;border-radius:4px;padding:0 4px;margin-left:6px}
    table{border-collapse:collapse;width:100%;font-size:13px}
    th,td{padding:4px 8px;border-bottom:1px solid var(--line);text-align:right;white-space:nowrap}
    th{color:var(--mute);font-weight:600;background:#fafbfc;position:sticky;top:0}
    body.js table.sortable th{cursor:pointer}body.js table.sortable th:hover{color:var(--ink)}
    td.l,th.l{text-align:left;white-space:normal}
    tr.warm td{background:#f1f3f5}tr.judged td{background:#fffaf3}tr.peak td:first-child{box-shadow:inset 3px 0 #c92a2a}
    .scroll{max-height:520px;overflow:auto;border:1px solid var(--line);border-radius:8px}
    .icicle{width:100%;height:auto;display:block;font-size:11px}
    .icicle rect{stroke:#fff;stroke-width:.6}.icicle text{fill:#1d2330;pointer-events:none;font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:11px}
    .icicle .root{fill:#ced4da}.icicle .h0{fill:#ffa94d}.icicle .h1{fill:#ffc078}.icicle .h2{fill:#ff8787}.icicle .h3{fill:#ffd43b}.icicle .h4{fill:#fab005}.icicle .h5{fill:#ff922b}
    .icicle.shrink .h0,.icicle.shrink .h1,.icicle.shrink .h2,.icicle.shrink .h3,.icicle.shrink .h4,.icicle.shrink .h5{fill:#74c0fc}
    .icicle .node:hover rect{stroke:#1d2330;stroke-width:1.2}.icicle .ghost{fill-opacity:.45}
    .flame-info{font-size:12.5px;color:var(--mute);min-height:1.5em;margin-top:6px}
    .empty{color:var(--mute)}
    .notes li{margin:3px 0}
    .status-added{color:var(--abandoned)}.status-removed{color:var(--good)}.pos{color:#c92a2a}.neg{color:var(--good)}
    footer{color:var(--mute);font-size:12px;margin-top:24px}
    """

    static let script = """
    (function(){
    document.body.classList.add('js');
    // As HumanUnits.bytes: decimal units, one decimal above 1000.
    function fmtBytes(n){if(Math.abs(n)<1000)return n+' B';var u=['kB','MB','GB','TB','PB'],i=0;n/=1000;while(Math.abs(n)>=999.95&&i<u.length-1){n/=1000;i++}return n.toFixed(1)+' '+u[i]}
    // Findings: filter by kind, module and type/function text; sort.
    var list=document.getElementById('finding-list');
    if(list){
      var items=[].slice.call(list.querySelectorAll('.finding'));
      var kinds=[].slice.call(document.querySelectorAll('.kind-filter'));
      var mod=document.getElementById('module-filter'),txt=document.getElementById('text-filter'),sort=document.getElementById('sort-findings');
      var count=document.getElementById('finding-count');
      function apply(){
        var on={};kinds.forEach(function(k){on[k.value]=k.checked});
        var m=mod?mod.value:'',t=txt?txt.value.toLowerCase():'',shown=0;
        items.forEach(function(el){
          var ok=on[el.dataset.kind]!==false&&(!m||el.dataset.module===m)&&(!t||(el.dataset.type+' '+el.dataset.function).toLowerCase().indexOf(t)>=0);
          el.hidden=!ok;if(ok)shown++;
        });
        if(count)count.textContent=shown+' of '+items.length+' shown';
      }
      function order(){
        var key=sort.value,sorted=items.slice();
        if(key!=='report')sorted.sort(function(a,b){
          if(key==='function'||key==='type')return (a.dataset[key]||'').localeCompare(b.dataset[key]||'');
          return Number(b.dataset[key])-Number(a.dataset[key]);});
        sorted.forEach(function(el){list.appendChild(el)});
      }
      kinds.forEach(function(k){k.addEventListener('change',apply)});
      if(mod)mod.addEventListener('change',apply);if(txt)txt.addEventListener('input',apply);
      if(sort)sort.addEventListener('change',order);
      apply();
    }
    // Tables: click a header to sort (numbers by data-v).
    [].forEach.call(document.querySelectorAll('table.sortable'),function(table){
      [].forEach.call(table.tHead.rows[0].cells,function(th,col){
        th.addEventListener('click',function(){
          var body=table.tBodies[0],rows=[].slice.call(body.rows),dir=th.dataset.dir==='asc'?-1:1;th.dataset.dir=dir===1?'asc':'desc';
          rows.sort(function(a,b){var x=a.cells[col],y=b.cells[col];if(!x||!y)return 0;
            var p=x.dataset.v,q=y.dataset.v;if(p!==undefined&&q!==undefined)return dir*(Number(p)-Number(q));
            return dir*x.textContent.localeCompare(y.textContent);});
          rows.forEach(function(r){body.appendChild(r)});
        });
      });
    });
    // Icicles: rebuild from the stacks, zoom on click, re-weigh per cycle.
    var NS='http://www.w3.org/2000/svg';
    function build(leaves,frames,cycle,rootName){
      var root={n:rootName,v:0,c:Object.create(null),k:[]};
      leaves.forEach(function(leaf){
        var w=cycle<0?leaf.w:Math.max(0,(leaf.p||[])[cycle]||0);if(!w)return;
        root.v+=w;var node=root;
        leaf.f.forEach(function(ix){var fr=frames[ix],c=node.c[fr[0]];if(!c){c=node.c[fr[0]]={n:fr[0],l:fr[1],v:0,c:Object.create(null),k:[],up:node,a:leaf.a};node.k.push(c)}c.v+=w;node=c;});
      });
      return root;
    }
    function el(name,attrs,parent){var e=document.createElementNS(NS,name);for(var k in attrs)e.setAttribute(k,attrs[k]);if(parent)parent.appendChild(e);return e}
    function hue(s){var h=2166136261;for(var i=0;i<s.length;i++){h=Math.imul(h^s.charCodeAt(i),16777619)>>>0}return 'h'+((h%1000003)%6)}
    [].forEach.call(document.querySelectorAll('.flame'),function(box){
      var data=document.getElementById(box.dataset.src);if(!data)return;
      var parsed=JSON.parse(data.textContent),leaves=parsed.leaves,frameTable=parsed.frames,svgOld=box.querySelector('svg.icicle'),info=box.querySelector('.flame-info'),pick=box.querySelector('select.cycle');
      var shrink=box.classList.contains('shrink-box');var W=980,H=20,focus=null,tree=null;
      function draw(){
        var root=tree,f=focus||root,chain=[];for(var a=f;a&&a!==root;a=a.up)chain.unshift(a);
        var min=f.v*0.002,vals=[];(function col(n){vals.push(n.v);n.k.forEach(col)})(f);
        if(vals.length>1500){vals.sort(function(a,b){return b-a});min=Math.max(min,vals[1499]+1e-9)}
        function depth(n){var d=0;n.k.forEach(function(c){if(c.v>=min)d=Math.max(d,depth(c))});return d+1}
        var levels=chain.length+depth(f);
        var svg=document.createElementNS(NS,'svg');svg.setAttribute('class','icicle'+(shrink?' shrink':''));svg.setAttribute('viewBox','0 0 '+W+' '+Math.max(H,levels*H));
        function node(n,x,w,lv,ghost){
          var g=el('g',{'class':'node'},svg);var t=el('title',{},g);
          t.textContent=n.n+(n.l?' ('+n.l+')':'')+': '+fmtBytes(n.v)+', '+(root.v?(100*n.v/root.v).toFixed(1):0)+'%';
          el('rect',{x:x,y:lv*H,width:Math.max(.5,w-.5),height:H-1,'class':(lv===0?'root':hue(n.n))+(ghost?' ghost':'')},g);
          var chars=Math.floor((w-6)/6.6);
          if(chars>=3){var s=n.n.length>chars?n.n.slice(0,chars-1)+'…':n.n;var tx=el('text',{x:x+3,y:lv*H+14},g);tx.textContent=s}
          g.addEventListener('click',function(){focus=(n===f&&n.up)?n.up:n;if(focus===root)focus=null;draw();show(n)});
          g.addEventListener('mouseenter',function(){show(n)});
        }
        node(root,0,W,0,f!==root);chain.forEach(function(a,i){if(a!==f)node(a,0,W,i+1,true)});
        function lay(n,x,w,lv){node(n,x,w,lv,false);var cx=x;n.k.slice().sort(function(a,b){return b.v-a.v}).forEach(function(c){if(c.v<min)return;var cw=w*c.v/n.v;lay(c,cx,cw,lv+1);cx+=cw})}
        if(f===root){var cx=0;root.k.slice().sort(function(a,b){return b.v-a.v}).forEach(function(c){if(c.v<min)return;var cw=W*c.v/root.v;lay(c,cx,cw,1);cx+=cw})}
        else lay(f,0,W,chain.length);
        var old=box.querySelector('svg.icicle');if(old)old.replaceWith(svg);else box.insertBefore(svg,info);
      }
      function show(n){if(!info)return;info.textContent='';info.appendChild(document.createTextNode(n.n+(n.l?' — '+n.l:'')+' — '+fmtBytes(n.v)+' '));
        if(n.a){var a=document.createElement('a');a.href='#'+n.a;a.textContent='→ finding';info.appendChild(a)}
        info.appendChild(document.createTextNode(focus?'  (click the top bar to zoom out)':'  (click to zoom)'));}
      function rebuild(){tree=build(leaves,frameTable,pick?Number(pick.value):-1,box.dataset.root||'all');focus=null;if(!tree.v){if(info)info.textContent='Nothing left behind in this cycle.';}draw()}
      if(pick)pick.addEventListener('change',rebuild);
      rebuild();
    });
    // When the page was ready, for the tests' "opens in under a second" check.
    document.body.dataset.readyMs=String(Math.round(performance.now()));
    })();
    """
}
